import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";

/**
 * Secrets kept at rest (outbound `whsec_` endpoint secrets, generated token keys) are sealed
 * with AES-256-GCM under a key from the environment. A sealed value reads
 * `enc:v2:<key id>:<iv>:<ciphertext and tag>` (base64url) and carries the place it is kept,
 * `table:id:column` (src/core/sealed-at.ts), as associated data: a copy moved to another row
 * or column does not open. `enc:v1:` values, sealed before places were bound, still open
 * anywhere, and a start rewrites them as `enc:v2:` under the same key. A value written
 * before a key was set still reads as plain text and is sealed at the next start.
 */
export const SEALED_PREFIX = "enc:v2:";
const UNBOUND_PREFIX = "enc:v1:";

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const BASE64_KEY = /^[A-Za-z0-9+/_-]{42,43}={0,1}$/;

interface BoxKey {
  id: string;
  bytes: Buffer;
}

interface Sealed {
  /** False for `enc:v1:`, sealed without its place. */
  bound: boolean;
  id: string;
  iv: string;
  body: string;
}

/**
 * Seals with the first key (the writing key); opens with any key whose id a value names, so
 * every node that lists a key reads what any other node sealed under it. A box without keys
 * seals nothing (plain text passes through) and refuses to open a sealed value.
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

  /** `plain` sealed under the writing key for the place `at`; unchanged when no key is set. */
  seal(plain: string, at: string): string {
    const key = this.#keys[0];
    return key ? sealWith(key, plain, at) : plain;
  }

  /**
   * The plain text of the value stored at `at`; a value that is not sealed is returned as it
   * is. CONFIG_INVALID when no listed key opens it, or when it does not open at this place.
   */
  open(stored: string, at: string): string {
    const sealed = parse(stored);
    if (!sealed) return stored;
    const key = this.#keyOf(sealed, at);
    try {
      const iv = Buffer.from(sealed.iv, "base64url");
      const body = Buffer.from(sealed.body, "base64url");
      if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new Error("truncated");
      const decipher = createDecipheriv("aes-256-gcm", key.bytes, iv);
      if (sealed.bound) decipher.setAAD(Buffer.from(at, "utf8"));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(body.subarray(0, body.length - TAG_BYTES)),
        decipher.final(),
      ]).toString("utf8");
    } catch (err) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        sealed.bound
          ? `The secret stored at ${at} (encrypted with key ${sealed.id}) does not open there: it was sealed for another row or column and copied there, or it was altered or cut short. Restore it from a backup, or replace it (an endpoint's secret with rotate-secret).`
          : `The secret stored at ${at} (encrypted with key ${sealed.id}) does not decrypt: it was altered or cut short. Restore it from a backup, or replace it (an endpoint's secret with rotate-secret).`,
        { cause: err },
      );
    }
  }

  /**
   * What a start stores in place of the value at `at`, without moving it to another key: a
   * plain value sealed under the writing key, an `enc:v1:` one rewritten with its place under
   * the key it is under, anything else unchanged. CONFIG_INVALID when a value is sealed under
   * a key not listed; a value that does not decrypt is left as it is (its use reports it).
   */
  upgrade(stored: string, at: string): string {
    const sealed = parse(stored);
    if (!sealed) return this.seal(stored, at);
    const key = this.#keyOf(sealed, at);
    if (sealed.bound) return stored;
    let plain: string;
    try {
      plain = this.open(stored, at);
    } catch {
      return stored;
    }
    return sealWith(key, plain, at);
  }

  /**
   * The value at `at` sealed under the writing key, bound to its place: what
   * `longhaul secrets reseal` stores once every node writes with that key. Unchanged when it
   * already is, or when no key is set and it is plain text. CONFIG_INVALID for a value no
   * listed key opens at this place.
   */
  reseal(stored: string, at: string): string {
    const plain = this.open(stored, at);
    const active = this.#keys[0];
    if (!active) return stored;
    const sealed = parse(stored);
    if (sealed?.bound && sealed.id === active.id) return stored;
    return sealWith(active, plain, at);
  }

  #keyOf(sealed: Sealed, at: string): BoxKey {
    const key = this.#keys.find((k) => k.id === sealed.id);
    if (key) return key;
    throw new LonghaulError(
      "CONFIG_INVALID",
      this.enabled
        ? `The secret stored at ${at} is encrypted with key ${sealed.id}, which is not among LONGHAUL_SECRET_KEY and LONGHAUL_SECRET_KEYS; add that key to LONGHAUL_SECRET_KEYS (it accepts keys for reading only).`
        : `The secret stored at ${at} is encrypted with key ${sealed.id}, but no encryption key is set; set LONGHAUL_SECRET_KEY to that key.`,
    );
  }
}

function sealWith(key: BoxKey, plain: string, at: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key.bytes, iv);
  cipher.setAAD(Buffer.from(at, "utf8"));
  const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `${SEALED_PREFIX}${key.id}:${iv.toString("base64url")}:${body.toString("base64url")}`;
}

function parse(stored: string): Sealed | null {
  const bound = stored.startsWith(SEALED_PREFIX);
  if (!bound && !stored.startsWith(UNBOUND_PREFIX)) return null;
  const [id = "", iv = "", body = ""] = stored.slice(SEALED_PREFIX.length).split(":");
  return { bound, id, iv, body };
}

export const isSealed = (stored: string) => parse(stored) !== null;

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
