import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  type KeyObject,
  sign,
} from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import { bytesOf, timestampText } from "./signed-message.ts";

/**
 * Standard Webhooks (www.standardwebhooks.com) signatures, in one place for every side that
 * signs or checks them: ingress verifies deliveries with them, outbound deliveries and the
 * simulator sign with them. The signed content is `id.timestamp.` followed by the raw body
 * bytes; `webhook-signature` is a space-separated list of `version,signature` entries
 * (`v1` HMAC-SHA256, `v1a` ed25519).
 */

export const ED25519_SIGNATURE_BYTES = 64;
const ED25519_KEY_BYTES = 32;
/** PKCS#8 DER prefix of an ed25519 private key; the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export type WebhookKey =
  | { kind: "hmac"; secret: KeyObject }
  | { kind: "ed25519-public"; publicKey: KeyObject }
  | { kind: "ed25519-private"; privateKey: KeyObject; publicKey: KeyObject };

/** The bytes before the body in the signed content: `id.timestamp.` as the headers carry them. */
export function signedPrefix(id: string, timestamp: string): Buffer {
  return Buffer.from(`${id}.${timestamp}.`, "utf8");
}

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
  const body = bytesOf(message.body);
  const prefix = signedPrefix(message.id, timestampText(message.timestampS));
  const key = decodeWebhookKey(message.secret);
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

/** The `version,signature` entries of a `webhook-signature` header; malformed entries are dropped. */
export function parseSignatureHeader(value: string): { version: string; value: string }[] {
  const entries: { version: string; value: string }[] = [];
  for (const part of value.split(" ")) {
    const comma = part.indexOf(",");
    if (comma <= 0) continue;
    entries.push({ version: part.slice(0, comma), value: part.slice(comma + 1) });
  }
  return entries;
}

/**
 * Decodes a secret once: `whsec_` (or bare base64) is an HMAC secret, `whpk_` an ed25519
 * public key (verifies only), `whsk_` an ed25519 seed (signs and verifies). Throws
 * `CONFIG_INVALID` for anything unusable, naming the kind of secret, never its value.
 */
export function decodeWebhookKey(secret: string): WebhookKey {
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
  return { kind: "hmac", secret: createSecretKey(raw) };
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
