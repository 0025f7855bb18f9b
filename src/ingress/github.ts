import { createHmac, type KeyObject } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import { bytesOf } from "../webhooks/signed-message.ts";
import {
  anyEqual,
  bodyEventId,
  header,
  requireHeaders,
  type Scheme,
  type SchemeSource,
  utf8SecretKeys,
  type Verified,
  type Verifier,
  type VerifyRequest,
} from "./scheme.ts";

/**
 * GitHub (docs.github.com, "Validating webhook deliveries"): `X-Hub-Signature-256:
 * sha256=<hex>`, the HMAC-SHA256 of the raw body keyed with the secret as UTF-8. GitHub signs
 * no timestamp and not `X-GitHub-Delivery`, so a captured delivery stays valid forever and
 * its delivery id can be changed or dropped at will. The inbox therefore dedupes on the body
 * itself (`sha256:<hex>`): the same signed bytes are recorded once whatever delivery id they
 * come under, for as long as the inbox remembers event ids (`inbox.dedupe_horizon_s`). The
 * delivery id is still passed on to be logged. The legacy SHA-1 `X-Hub-Signature` is never
 * accepted.
 */

const NAME = "github";
const HEADER = "x-hub-signature-256";
const PREFIX = "sha256=";

export const github: Scheme = {
  name: NAME,
  create(source: SchemeSource): Verifier {
    const keys = utf8SecretKeys(source);
    return { verify: (req) => verifyGithub(req, keys) };
  },
};

function verifyGithub(req: VerifyRequest, keys: readonly KeyObject[]): Verified {
  const hint = header(req.headers, "x-hub-signature")
    ? "only the SHA-1 X-Hub-Signature came, which is not accepted; GitHub sends X-Hub-Signature-256 once the webhook has a secret"
    : "GitHub sends X-Hub-Signature-256 once the webhook has a secret; set one in the webhook settings";
  const [value] = requireHeaders(req.headers, [HEADER], NAME, hint);
  if (!value.startsWith(PREFIX)) {
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      "X-Hub-Signature-256 must read sha256=<hex>; other algorithms are not accepted.",
    );
  }
  const expected = keys.map((key) => mac(key, req.body));
  if (!anyEqual([value.slice(PREFIX.length)], expected)) {
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      "X-Hub-Signature-256 does not match a secret of this source. Check that the source holds the webhook's secret; after changing it in GitHub, keep the previous one listed until redeliveries are done.",
      { details: { scheme: NAME } },
    );
  }
  const delivery = header(req.headers, "x-github-delivery");
  return {
    eventId: bodyEventId(req.body),
    timestampS: null,
    ...(delivery ? { deliveryId: delivery.slice(0, 200) } : {}),
  };
}

function mac(key: KeyObject | string, body: Buffer): string {
  return createHmac("sha256", key).update(body).digest("hex");
}

/** The `X-Hub-Signature-256` value GitHub would send for `body` (for tests and the simulator). */
export function signGithub(message: { body: Buffer | string; secret: string }): string {
  return `${PREFIX}${mac(message.secret, bytesOf(message.body))}`;
}
