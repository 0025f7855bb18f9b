import { createHmac, type KeyObject } from "node:crypto";
import { bytesOf, timestampText } from "../webhooks/signed-message.ts";
import { bodyField, requireHeaders } from "./scheme.ts";
import { timestampedHmacScheme } from "./timestamped-hmac.ts";

/**
 * The brief's Google-style HMAC: `X-Goog-Timestamp` in seconds and `X-Goog-Signature`, the
 * base64 HMAC-SHA256 of `<timestamp>.` followed by the raw body, keyed with the secret as
 * UTF-8. The event id is the body's `id`, read only once the signature holds.
 */

const HINT = "a goog-hmac sender sets X-Goog-Signature and X-Goog-Timestamp";

export const googHmac = timestampedHmacScheme({
  name: "goog-hmac",
  read(headers) {
    const [signature, timestamp] = requireHeaders(
      headers,
      ["x-goog-signature", "x-goog-timestamp"],
      "goog-hmac",
      HINT,
    );
    return { timestamp, candidates: [signature] };
  },
  timestampName: "X-Goog-Timestamp",
  mac,
  mismatch:
    "X-Goog-Signature does not match a secret of this source. Check that the source holds the sender's current secret; after a rotation keep the previous one listed until the sender switches.",
  eventId: (req) => bodyField(req.body, "id"),
});

function mac(key: KeyObject | string, timestamp: string, body: Buffer): string {
  return createHmac("sha256", key).update(`${timestamp}.`, "utf8").update(body).digest("base64");
}

/** The `X-Goog-Signature` value for `body` sent with `X-Goog-Timestamp: timestampS`. */
export function signGoogHmac(message: { timestampS: number; body: Buffer | string; secret: string }): string {
  return mac(message.secret, timestampText(message.timestampS), bytesOf(message.body));
}
