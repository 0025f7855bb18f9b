import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";

/**
 * Secrets kept at rest (outbound `whsec_` endpoint secrets, generated token keys) are sealed
 * with AES-256-GCM under a key from the environment. A sealed value reads
 * `enc:v1:<key id>:<iv>:<ciphertext and tag>` (base64url), so a value written before a key was
 * set still reads as plain text and is sealed the next time it is written or resealed.
 */
export const SEALED_PREFIX = "enc:v1:";

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const BASE64_KEY = /^[A-Za-z0-9+/_-]{42,43}={0,1}$/;

interface BoxKey {
  id: string;
  bytes: Buffer;
}

/**
 * Seals with the first key; opens with any key whose id a value names, so an old key
 * keeps reading while values are resealed under a new one. A box without keys seals
 * nothing (plain text passes through) and refuses to open a sealed value.
 */
export class SecretBox {
  readonly #keys: BoxKey[];

  constructor(keys: readonly Buffer[]) {
    const seen = new Set<string>();
    this.#keys = [];
    for (const bytes of keys) {
      if (bytes.length !== KEY_BYTES) {
        throw invalid(`a key is ${bytes.length} bytes; each key must be exactly ${KEY_BYTES} bytes.`);
      }
      const id = keyId(bytes);
      if (seen.has(id)) continue;
      seen.add(id);
      this.#keys.push({ id, bytes });
    }
  }

  /** True when a key is set, so values are sealed on write. */
  get enabled(): boolean {
    return this.#keys.length > 0;
  }

  /** The id of the key new values are sealed with, or null without keys. */
  get activeKeyId(): string | null {
    return this.#keys[0]?.id ?? null;
  }

  /** `plain` sealed under the first key; unchanged when no key is set. */
  seal(plain: string): string {
    const key = this.#keys[0];
    if (!key) return plain;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", key.bytes, iv);
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `${SEALED_PREFIX}${key.id}:${iv.toString("base64url")}:${body.toString("base64url")}`;
  }

  /** The plain text of a stored value; a value that is not sealed is returned as it is. */
  open(stored: string): string {
    if (!isSealed(stored)) return stored;
    const [id, ivText, bodyText] = stored.slice(SEALED_PREFIX.length).split(":");
    const key = this.#keys.find((k) => k.id === id);
    if (!key) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        this.enabled
          ? `A stored secret is encrypted with key ${id}, which is not among LONGHAUL_SECRET_KEY and LONGHAUL_SECRET_KEYS; add that key back (LONGHAUL_SECRET_KEYS accepts old keys for reading).`
          : `A stored secret is encrypted with key ${id}, but no encryption key is set; set LONGHAUL_SECRET_KEY to that key.`,
      );
    }
    const iv = Buffer.from(ivText ?? "", "base64url");
    const body = Buffer.from(bodyText ?? "", "base64url");
    try {
      if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new Error("truncated");
      const decipher = createDecipheriv("aes-256-gcm", key.bytes, iv);
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(body.subarray(0, body.length - TAG_BYTES)),
        decipher.final(),
      ]).toString("utf8");
    } catch (err) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `A stored secret encrypted with key ${id} does not decrypt: it was altered or cut short. Restore it from a backup.`,
        { cause: err },
      );
    }
  }

  /**
   * The value to store in place of `stored`: sealed under the first key. Unchanged when it
   * already is, or when no key is set and it is plain text.
   */
  reseal(stored: string): string {
    const active = this.activeKeyId;
    if (active === null) {
      this.open(stored); // refuses a sealed value this box cannot read
      return stored;
    }
    if (stored.startsWith(`${SEALED_PREFIX}${active}:`)) return stored;
    return this.seal(this.open(stored));
  }
}

export const isSealed = (stored: string) => stored.startsWith(SEALED_PREFIX);

/** A short public id of a key: the first 8 hex digits of its SHA-256, never the key itself. */
const keyId = (bytes: Buffer) =>
  createHash("sha256").update("longhaul-secret-key").update(bytes).digest("hex").slice(0, 8);

/** 32 bytes given as 64 hex digits or as base64 (standard or URL-safe). */
export function parseSecretKey(text: string, where: string): Buffer {
  const t = text.trim();
  if (HEX_KEY.test(t)) return Buffer.from(t, "hex");
  if (BASE64_KEY.test(t)) {
    const bytes = Buffer.from(t.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    if (bytes.length === KEY_BYTES) return bytes;
  }
  throw invalid(`${where} is not 32 bytes in base64 or hex; make one with \`openssl rand -base64 32\`.`);
}

/**
 * The box of a deployment: `LONGHAUL_SECRET_KEY` seals (and opens), every key of
 * `LONGHAUL_SECRET_KEYS` (comma or space separated) opens; without `LONGHAUL_SECRET_KEY` the
 * first of `LONGHAUL_SECRET_KEYS` seals. `keys`, when given, replaces both.
 */
export function secretBoxFrom(
  keys: readonly string[] | undefined,
  env: NodeJS.ProcessEnv = process.env,
): SecretBox {
  if (keys !== undefined) return new SecretBox(keys.map((k, i) => parseSecretKey(k, `secret key ${i + 1}`)));
  const list: Buffer[] = [];
  const one = env.LONGHAUL_SECRET_KEY?.trim();
  if (one) list.push(parseSecretKey(one, "LONGHAUL_SECRET_KEY"));
  const more = (env.LONGHAUL_SECRET_KEYS ?? "").split(/[\s,]+/).filter(Boolean);
  for (const [i, k] of more.entries()) list.push(parseSecretKey(k, `key ${i + 1} of LONGHAUL_SECRET_KEYS`));
  return new SecretBox(list);
}

function invalid(problem: string): LonghaulError {
  return new LonghaulError("CONFIG_INVALID", `Secret encryption key: ${problem}`);
}
