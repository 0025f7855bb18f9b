import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  type KeyObject,
  sign,
  verify,
} from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import {
  bytesOf,
  checkWindow,
  parseTimestampS,
  requireHeaders,
  requireSecrets,
  type Scheme,
  type SchemeSource,
  timestampText,
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
const ED25519_SIGNATURE_BYTES = 64;
const ED25519_KEY_BYTES = 32;
/** PKCS#8 DER prefix of an ed25519 private key; the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

type Key =
  | { kind: "hmac"; secret: KeyObject }
  | { kind: "ed25519-public"; publicKey: KeyObject }
  | { kind: "ed25519-private"; privateKey: KeyObject; publicKey: KeyObject };

/** The keys of one source, decoded once: HMAC secrets and ed25519 public keys. */
function verifierFor(keys: readonly Key[], toleranceS: number): { verify(req: VerifyRequest): Verified } {
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
          "webhook-signature holds no well-formed v1 or v1a entry; other versions are not accepted. Have the sender sign with v1 (HMAC) or v1a (ed25519).",
        );
      }

      const prefix = Buffer.from(`${id}.${timestamp}.`, "utf8");
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
        "No signature in webhook-signature matches a secret of this source. Check that the source holds the sender's current secret; after a rotation keep the previous one listed until the sender switches.",
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
    return verifierFor(requireSecrets(source).map(decodeKey), toleranceOf(source));
  },
  verify(req) {
    if (req.secrets.length === 0) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        "No secrets were given, so no Standard Webhooks signature can match; pass at least one.",
      );
    }
    return verifierFor(req.secrets.map(decodeKey), req.toleranceS).verify(req);
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
  const body = bytesOf(message.body);
  const prefix = Buffer.from(`${message.id}.${timestampText(message.timestampS)}.`, "utf8");
  const key = decodeKey(message.secret);
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

function parseSignatureHeader(value: string): { version: string; value: string }[] {
  const entries: { version: string; value: string }[] = [];
  for (const part of value.split(" ")) {
    const comma = part.indexOf(",");
    if (comma <= 0) continue;
    entries.push({ version: part.slice(0, comma), value: part.slice(comma + 1) });
  }
  return entries;
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
