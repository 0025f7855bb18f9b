import { createHmac, verify } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import {
  decodeWebhookKey,
  ED25519_SIGNATURE_BYTES,
  parseSignatureHeader,
  signedPrefix,
  type WebhookKey,
} from "../webhooks/standard-webhooks.ts";
import {
  checkWindow,
  parseTimestampS,
  requireHeaders,
  requireSecrets,
  type Scheme,
  type SchemeSource,
  timingSafeEqualStr,
  toleranceOf,
  type Verified,
  type Verifier,
  type VerifyRequest,
} from "./scheme.ts";

/**
 * Standard Webhooks (www.standardwebhooks.com), as sent by Svix, OpenAI and the Gemini API.
 *
 * Headers `webhook-id`, `webhook-timestamp` and `webhook-signature`. The signed content is
 * `id.timestamp.` followed by the raw body bytes, which are hashed as received: a body is
 * never decoded to text before it is verified (ARCHITECTURE §4.3). `webhook-signature` is a
 * space-separated list of `version,signature` entries:
 * - `v1`: base64 HMAC-SHA256, keyed with the base64-decoded secret after its `whsec_` prefix;
 * - `v1a`: base64 ed25519 signature, checked against a `whpk_` public key (base64, 32 bytes).
 * Entries of any other version are skipped, so they can never be what lets a request in.
 */

const NAME = "standard-webhooks";
const HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;
const SIGNATURE_MISSING_HINT =
  "a Standard Webhooks sender sets webhook-id, webhook-timestamp and webhook-signature";
/** The keys of one source, decoded once: HMAC secrets and ed25519 public keys. */
function verifierFor(
  keys: readonly WebhookKey[],
  toleranceS: number,
): { verify(req: VerifyRequest): Verified } {
  const hmacKeys = keys.flatMap((k) => (k.kind === "hmac" ? [k.secret] : []));
  const publicKeys = keys.flatMap((k) => (k.kind === "hmac" ? [] : [k.publicKey]));
  return {
    verify(req: VerifyRequest): Verified {
      const [id, timestamp, signature] = requireHeaders(req.headers, HEADERS, NAME, SIGNATURE_MISSING_HINT);
      const timestampS = parseTimestampS(timestamp, "webhook-timestamp");
      checkWindow(timestampS, req.nowMs, toleranceS, "webhook-timestamp");

      const entries = parseSignatureHeader(signature);
      const hmacs = entries.filter((e) => e.version === "v1").map((e) => e.value);
      const ed25519 = entries
        .filter((e) => e.version === "v1a")
        .map((e) => Buffer.from(e.value, "base64"))
        .filter((s) => s.length === ED25519_SIGNATURE_BYTES);
      if (hmacs.length === 0 && ed25519.length === 0) {
        throw new LonghaulError(
          "SIGNATURE_INVALID",
          `webhook-signature holds no well-formed v1 or v1a entry; other versions are not accepted. Have the sender sign with v1 (HMAC) or v1a (ed25519).${jwtHint(signature)}`,
        );
      }

      const prefix = signedPrefix(id, timestamp);
      if (hmacs.length > 0) {
        for (const key of hmacKeys) {
          const expected = createHmac("sha256", key).update(prefix).update(req.body).digest("base64");
          if (hmacs.some((candidate) => timingSafeEqualStr(candidate, expected)))
            return { eventId: id, timestampS };
        }
      }
      if (ed25519.length > 0 && publicKeys.length > 0) {
        const content = Buffer.concat([prefix, req.body]);
        for (const key of publicKeys) {
          if (ed25519.some((candidate) => verify(null, content, key, candidate)))
            return { eventId: id, timestampS };
        }
      }
      throw new LonghaulError(
        "SIGNATURE_INVALID",
        `No signature in webhook-signature matches a secret of this source. Check that the source holds the sender's current secret; after a rotation keep the previous one listed until the sender switches.${jwtHint(signature)}`,
        { details: { scheme: NAME, eventId: id } },
      );
    },
  };
}

/**
 * The Standard Webhooks scheme. Besides `create`, `verify` checks one delivery against
 * secrets given with it (a receiver of longhaul's own outbound webhooks, a test); it decodes
 * the secrets on every call, so a source uses `create`.
 */
export const standardWebhooks: Scheme & {
  verify(req: VerifyRequest & { secrets: readonly string[]; toleranceS: number }): Verified;
} = {
  name: NAME,
  create(source: SchemeSource): Verifier {
    return verifierFor(requireSecrets(source).map(decodeWebhookKey), toleranceOf(source));
  },
  verify(req) {
    if (req.secrets.length === 0) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        "No secrets were given, so no Standard Webhooks signature can match; pass at least one.",
      );
    }
    return verifierFor(req.secrets.map(decodeWebhookKey), req.toleranceS).verify(req);
  },
};

/**
 * A hint for a delivery whose webhook-signature is a JWT, as Gemini's per-request webhooks
 * send it: such a delivery belongs to a `jwt` source, and no secret here will ever match it.
 */
function jwtHint(signature: string): string {
  const jws = /(^|[ ,])[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+( |$)/;
  return jws.test(signature)
    ? " webhook-signature holds a JWT: per-request (dynamic) Gemini webhooks are signed that way and need a source with scheme jwt."
    : "";
}
