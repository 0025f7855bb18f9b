import { createHmac, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import { header, type Scheme, timingSafeEqualStr, type Verified, type VerifyInput } from "./scheme.ts";

/**
 * Standard Webhooks (www.standardwebhooks.com), as sent by Svix, OpenAI and the Gemini API.
 *
 * Headers `webhook-id`, `webhook-timestamp` and `webhook-signature`. The signed content is
 * `id.timestamp.` followed by the raw body bytes, which are hashed as received: a body is
 * never decoded to text before it is verified (DESIGN §4.3). `webhook-signature` is a
 * space-separated list of `version,signature` entries:
 * - `v1`: base64 HMAC-SHA256, keyed with the base64-decoded secret after its `whsec_` prefix;
 * - `v1a`: base64 ed25519 signature, checked against a `whpk_` public key (base64, 32 bytes).
 * Entries of any other version are skipped, so they can never be what lets a request in.
 */

const SIGNATURE_MISSING_HINT =
  "a Standard Webhooks sender sets webhook-id, webhook-timestamp and webhook-signature";
const ED25519_SIGNATURE_BYTES = 64;
const ED25519_KEY_BYTES = 32;
/** PKCS#8 DER prefix of an ed25519 private key; the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

type Key =
  | { kind: "hmac"; secret: Buffer }
  | { kind: "ed25519-public"; publicKey: KeyObject }
  | { kind: "ed25519-private"; privateKey: KeyObject; publicKey: KeyObject };

export const standardWebhooks: Scheme = {
  name: "standard-webhooks",
  verify(input: VerifyInput): Verified {
    const id = header(input.headers, "webhook-id");
    const timestamp = header(input.headers, "webhook-timestamp");
    const signature = header(input.headers, "webhook-signature");
    if (!id || !timestamp || !signature) {
      const missing = [
        id ? null : "webhook-id",
        timestamp ? null : "webhook-timestamp",
        signature ? null : "webhook-signature",
      ].filter((h) => h !== null);
      throw new LonghaulError(
        "SIGNATURE_MISSING",
        `The request has no ${missing.join(", ")} header; ${SIGNATURE_MISSING_HINT}.`,
        { details: { scheme: "standard-webhooks", missing } },
      );
    }

    const timestampS = parseTimestamp(timestamp);
    checkWindow(timestampS, input.nowMs, input.toleranceS);
    if (input.secrets.length === 0) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        "This source has no secrets, so no Standard Webhooks signature can match; configure at least one.",
      );
    }

    const entries = parseSignatureHeader(signature);
    const hmacs = entries.filter((e) => e.version === "v1").map((e) => e.value);
    const ed25519 = entries.filter((e) => e.version === "v1a").map((e) => Buffer.from(e.value, "base64"));
    if (hmacs.length === 0 && ed25519.length === 0) {
      throw new LonghaulError(
        "SIGNATURE_INVALID",
        "webhook-signature holds no v1 or v1a entry; other versions are not accepted. Have the sender sign with v1 (HMAC) or v1a (ed25519).",
      );
    }

    const prefix = Buffer.from(`${id}.${timestamp}.`, "utf8");
    for (const secret of input.secrets) {
      const key = keyOf(secret);
      if (key.kind === "hmac") {
        if (hmacs.length === 0) continue;
        const expected = createHmac("sha256", key.secret).update(prefix).update(input.body).digest("base64");
        if (hmacs.some((candidate) => timingSafeEqualStr(candidate, expected)))
          return { eventId: id, timestampS };
      } else {
        if (ed25519.length === 0) continue;
        const content = Buffer.concat([prefix, input.body]);
        for (const candidate of ed25519) {
          if (
            candidate.length === ED25519_SIGNATURE_BYTES &&
            verify(null, content, key.publicKey, candidate)
          ) {
            return { eventId: id, timestampS };
          }
        }
      }
    }
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      "No signature in webhook-signature matches a secret of this source. Check that the source holds the sender's current secret; after a rotation keep the previous one listed until the sender switches.",
      { details: { scheme: "standard-webhooks", eventId: id } },
    );
  },
};

/**
 * The `webhook-signature` value for a message: `v1,<base64 HMAC>` with a `whsec_` (or bare
 * base64) secret, `v1a,<base64 ed25519>` with a `whsk_` secret key (base64 of the 32-byte
 * seed, or of the 64-byte seed and public key). Throws `CONFIG_INVALID` for an unusable secret.
 */
export function signStandardWebhook(message: {
  id: string;
  timestampS: number;
  body: Buffer | string;
  secret: string;
}): string {
  if (!Number.isSafeInteger(message.timestampS) || message.timestampS < 0) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `A webhook timestamp is a whole number of seconds; got ${message.timestampS}.`,
    );
  }
  const body = typeof message.body === "string" ? Buffer.from(message.body, "utf8") : message.body;
  const prefix = Buffer.from(`${message.id}.${message.timestampS}.`, "utf8");
  const key = keyOf(message.secret);
  switch (key.kind) {
    case "hmac":
      return `v1,${createHmac("sha256", key.secret).update(prefix).update(body).digest("base64")}`;
    case "ed25519-private":
      return `v1a,${sign(null, Buffer.concat([prefix, body]), key.privateKey).toString("base64")}`;
    case "ed25519-public":
      throw new LonghaulError(
        "CONFIG_INVALID",
        "A whpk_ public key can only verify; sign with the matching whsk_ secret key.",
      );
  }
}

function parseTimestamp(value: string): number {
  const seconds = /^\d{1,15}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(seconds)) {
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      `webhook-timestamp must be a whole number of seconds since the epoch; got ${JSON.stringify(value.slice(0, 40))}.`,
    );
  }
  return seconds;
}

function checkWindow(timestampS: number, nowMs: number, toleranceS: number): void {
  const nowS = Math.floor(nowMs / 1000);
  if (Math.abs(nowS - timestampS) <= toleranceS) return;
  const direction = timestampS < nowS ? "old" : "far in the future";
  throw new LonghaulError(
    "TIMESTAMP_OUT_OF_TOLERANCE",
    `webhook-timestamp ${timestampS} is ${Math.abs(nowS - timestampS)} s ${direction}, beyond the ${toleranceS} s tolerance; check the sender's clock, or replay the event with a fresh timestamp.`,
    { details: { timestampS, nowS, toleranceS } },
  );
}

function parseSignatureHeader(value: string): { version: string; value: string }[] {
  const entries: { version: string; value: string }[] = [];
  for (const part of value.split(" ")) {
    const comma = part.indexOf(",");
    if (comma <= 0) continue;
    entries.push({ version: part.slice(0, comma), value: part.slice(comma + 1) });
  }
  return entries;
}

/**
 * Decoded keys by secret string, so the hot path neither base64-decodes nor builds key
 * objects per request. A source holds a handful of secrets; the bound only stops a
 * misconfigured caller from growing it without end.
 */
const keyCache = new Map<string, Key>();
const KEY_CACHE_LIMIT = 256;

function keyOf(secret: string): Key {
  const cached = keyCache.get(secret);
  if (cached) return cached;
  const key = decodeKey(secret);
  if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
  keyCache.set(secret, key);
  return key;
}

function decodeKey(secret: string): Key {
  if (secret.startsWith("whpk_")) {
    const raw = decodeBase64(secret.slice(5), "whpk_ public key");
    if (raw.length !== ED25519_KEY_BYTES) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `A whpk_ public key is 32 bytes in base64; this one decodes to ${raw.length} bytes.`,
      );
    }
    const publicKey = createPublicKey({
      key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") },
      format: "jwk",
    });
    return { kind: "ed25519-public", publicKey };
  }
  if (secret.startsWith("whsk_")) {
    const raw = decodeBase64(secret.slice(5), "whsk_ secret key");
    if (raw.length !== ED25519_KEY_BYTES && raw.length !== 2 * ED25519_KEY_BYTES) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `A whsk_ secret key is a 32-byte ed25519 seed (optionally followed by its public key) in base64; this one decodes to ${raw.length} bytes.`,
      );
    }
    const der = Buffer.concat([ED25519_PKCS8_PREFIX, raw.subarray(0, ED25519_KEY_BYTES)]);
    const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
    return { kind: "ed25519-private", privateKey, publicKey: createPublicKey(privateKey) };
  }
  const raw = decodeBase64(secret.startsWith("whsec_") ? secret.slice(6) : secret, "whsec_ secret");
  if (raw.length === 0) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      "A Standard Webhooks secret is empty; configure the whsec_ secret.",
    );
  }
  return { kind: "hmac", secret: raw };
}

function decodeBase64(text: string, what: string): Buffer {
  if (!BASE64.test(text)) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `This ${what} is not base64 after its prefix; copy it again from the sender's settings.`,
    );
  }
  return Buffer.from(text, "base64");
}
