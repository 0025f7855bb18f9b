import { createHmac, type KeyObject } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import { bytesOf, timestampText } from "../webhooks/signed-message.ts";
import { bodyField, requireHeaders } from "./scheme.ts";
import { timestampedHmacScheme } from "./timestamped-hmac.ts";

/**
 * Stripe (docs.stripe.com/webhooks): `Stripe-Signature: t=<ts>,v1=<hex>[,v1=<hex>…][,v0=…]`.
 * Each `v1` is the hex HMAC-SHA256 of `<ts>.` followed by the raw body, keyed with the whole
 * `whsec_…` string as UTF-8. Any `v1` may match (Stripe sends one per active secret while a
 * secret is being rolled); entries of other schemes, such as the test-mode `v0`, are skipped.
 * The event id is the `id` of the body, read only once the signature holds.
 */

const HINT = "Stripe sends Stripe-Signature: t=<timestamp>,v1=<signature>";

export const stripe = timestampedHmacScheme({
  name: "stripe",
  read: (headers) => parseHeader(requireHeaders(headers, ["stripe-signature"], "stripe", HINT)[0]),
  timestampName: "The t= of Stripe-Signature",
  mac,
  mismatch:
    "No v1 signature in Stripe-Signature matches a secret of this source. Check that the source holds the endpoint's signing secret (whsec_…); during a roll keep the old one listed until it expires.",
  eventId: (req) => bodyField(req.body, "id"),
});

function parseHeader(value: string): { timestamp: string; candidates: string[] } {
  const timestamps: string[] = [];
  const candidates: string[] = [];
  for (const item of value.split(",")) {
    const eq = item.indexOf("=");
    if (eq <= 0) continue;
    const key = item.slice(0, eq);
    if (key === "t") timestamps.push(item.slice(eq + 1));
    else if (key === "v1") candidates.push(item.slice(eq + 1));
  }
  const [timestamp] = timestamps;
  if (timestamp === undefined || timestamps.length > 1) {
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      `Stripe-Signature must hold exactly one t= timestamp; it holds ${timestamps.length}. ${HINT}.`,
    );
  }
  if (candidates.length === 0) {
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      "Stripe-Signature holds no v1 signature; other schemes (v0) are not accepted. Send events signed with v1.",
    );
  }
  return { timestamp, candidates };
}

function mac(key: KeyObject | string, timestamp: string, body: Buffer): string {
  return createHmac("sha256", key).update(`${timestamp}.`, "utf8").update(body).digest("hex");
}

/** The `Stripe-Signature` value Stripe would send for `body` at `timestampS` (tests, the simulator). */
export function signStripe(message: { timestampS: number; body: Buffer | string; secret: string }): string {
  const timestamp = timestampText(message.timestampS);
  return `t=${timestamp},v1=${mac(message.secret, timestamp, bytesOf(message.body))}`;
}
