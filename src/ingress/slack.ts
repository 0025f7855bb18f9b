import { createHmac, type KeyObject } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import { bytesOf, timestampText } from "../webhooks/signed-message.ts";
import { bodyField, header, requireHeaders, type VerifyRequest } from "./scheme.ts";
import { timestampedHmacScheme } from "./timestamped-hmac.ts";

/**
 * Slack (api.slack.com, "Verifying requests from Slack"): `X-Slack-Request-Timestamp` in
 * seconds and `X-Slack-Signature: v0=<hex>`, the HMAC-SHA256 of `v0:<timestamp>:` followed
 * by the raw body, keyed with the signing secret as UTF-8. A signature of any other version
 * is refused. The event id is the Events API body's `event_id`.
 *
 * Interactivity requests (buttons, modals) come form-encoded, `payload=<url-encoded JSON>`:
 * the signature is checked on those raw bytes like any other, and the event is the JSON of
 * the `payload` field (deduped on the raw body's hash: the payload carries no event id).
 */

const HINT = "Slack sends X-Slack-Signature and X-Slack-Request-Timestamp";

export const slack = timestampedHmacScheme({
  name: "slack",
  read(headers) {
    const [signature, timestamp] = requireHeaders(
      headers,
      ["x-slack-signature", "x-slack-request-timestamp"],
      "slack",
      HINT,
    );
    if (!signature.startsWith("v0=")) {
      throw new LonghaulError(
        "SIGNATURE_INVALID",
        "X-Slack-Signature must read v0=<hex>; other versions are not accepted.",
      );
    }
    return { timestamp, candidates: [signature] };
  },
  timestampName: "X-Slack-Request-Timestamp",
  mac,
  mismatch:
    "X-Slack-Signature does not match a signing secret of this source. Check that the source holds the app's current signing secret (Basic Information in the app settings).",
  eventId: (req) => bodyField(req.body, "event_id"),
  eventBody: (req) => (isForm(req.headers) ? formPayload(req.body) : undefined),
});

function isForm(headers: VerifyRequest["headers"]): boolean {
  const type = header(headers, "content-type");
  return (
    type !== undefined && type.split(";")[0]!.trim().toLowerCase() === "application/x-www-form-urlencoded"
  );
}

/**
 * The `payload` field of a form-encoded body, as UTF-8 bytes, for the route to read as JSON.
 * A signed form without one (a slash command) is refused with 400, naming what is taken.
 */
function formPayload(body: Buffer): Buffer {
  const payload = new URLSearchParams(body.toString("utf8")).get("payload");
  if (payload === null || payload === "") {
    throw new LonghaulError(
      "INVALID_JSON",
      "The signature is valid but this form-encoded Slack request has no payload field; only interactivity requests (payload=<JSON>) and Events API JSON are events here.",
    );
  }
  return Buffer.from(payload, "utf8");
}

function mac(key: KeyObject | string, timestamp: string, body: Buffer): string {
  return `v0=${createHmac("sha256", key).update(`v0:${timestamp}:`, "utf8").update(body).digest("hex")}`;
}

/** The `X-Slack-Signature` value for `body` sent with `X-Slack-Request-Timestamp: timestampS`. */
export function signSlack(message: { timestampS: number; body: Buffer | string; secret: string }): string {
  return mac(message.secret, timestampText(message.timestampS), bytesOf(message.body));
}
