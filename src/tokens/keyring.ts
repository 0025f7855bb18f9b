import { createHmac, createSecretKey, type KeyObject, randomBytes } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";

/**
 * One key of the keyring. `secret` is either a string of at least 16 characters, whose
 * UTF-8 bytes are the HMAC key, or `base64:` followed by the key bytes in base64 (at least
 * 16 bytes). Use 32 random bytes, as `generateTokenKey` does; a short passphrase is weak.
 */
export interface TokenKey {
  id: string;
  secret: string;
}

export interface KeyringOptions {
  /** The id of the key that signs new tokens; it must be in `keys` and not retired. */
  active: string;
  /** The keys whose tokens verify, the active one among them. */
  keys: TokenKey[];
  /** Ids of keys whose tokens are refused from now on, even while they are still in `keys`. */
  retired?: string[];
}

/** The store's meta key under which `keyringFromConfig` keeps generated keys. */
export const TOKEN_KEYS_META_KEY = "tokens.keys";

const KEY_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const MIN_SECRET_CHARS = 16;
const MIN_SECRET_BYTES = 16;
const GENERATED_SECRET_BYTES = 32;
const BASE64_PREFIX = "base64:";
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The token keys of a deployment: one signs, several verify, so keys rotate without
 * breaking the links already handed out. Secrets are decoded once, here, and never leave
 * the keyring; callers only get MACs.
 */
export class Keyring {
  readonly activeKeyId: string;
  readonly #keys: ReadonlyMap<string, KeyObject>;

  constructor(options: KeyringOptions) {
    if (typeof options !== "object" || options === null) {
      throw invalid("a keyring needs { active, keys, retired? }.");
    }
    const keys = checkKeys(options.keys);
    const retired = checkRetired(options.retired);
    const active = options.active;
    if (!keys.some((k) => k.id === active)) {
      throw invalid(`the active key ${describeId(active)} is not among the keys; add it to the list.`);
    }
    if (retired.has(active)) {
      throw invalid(`the active key "${active}" is also retired; make another key active first.`);
    }
    const verifying = new Map<string, KeyObject>();
    // The active key first, so `keyIds` reads in the order a rotation cares about.
    for (const key of [...keys.filter((k) => k.id === active), ...keys.filter((k) => k.id !== active)]) {
      if (!retired.has(key.id)) verifying.set(key.id, createSecretKey(decodeSecret(key)));
    }
    this.activeKeyId = active;
    this.#keys = verifying;
  }

  /** The first key signs, every key verifies. */
  static from(keys: readonly TokenKey[]): Keyring {
    const list = checkKeys(keys);
    return new Keyring({ active: list[0]!.id, keys: list });
  }

  /** Ids of the keys whose tokens verify, the active one first. */
  get keyIds(): string[] {
    return [...this.#keys.keys()];
  }

  /** HMAC-SHA256 of `data` with key `keyId`; `undefined` when no key of that id verifies. */
  hmac(keyId: string, data: Uint8Array): Buffer | undefined {
    const key = this.#keys.get(keyId);
    return key === undefined ? undefined : createHmac("sha256", key).update(data).digest();
  }
}

/** A new key: 32 random bytes, and an id like `k_1f0c9a7e` unless one is given. */
export function generateTokenKey(id?: string): TokenKey {
  return {
    id: id ?? `k_${randomBytes(4).toString("hex")}`,
    secret: `${BASE64_PREFIX}${randomBytes(GENERATED_SECRET_BYTES).toString("base64")}`,
  };
}

/**
 * The deployment's keyring. Keys given in the configuration win (the first signs). Without
 * them, the keys kept in the store are used; on first start one key is generated and put
 * there with put-if-absent semantics. `store` returns the value actually stored, which is
 * another node's when that node got there first, and that value is the one used: every
 * node of a deployment must sign and verify with the same keys.
 */
export async function keyringFromConfig(
  config: { keys?: TokenKey[] } | undefined,
  stored: () => Promise<string | null>,
  store: (json: string) => Promise<string>,
): Promise<Keyring> {
  if (config?.keys !== undefined) return Keyring.from(config.keys);
  const existing = await stored();
  const json = existing ?? (await store(JSON.stringify({ keys: [generateTokenKey()] })));
  return Keyring.from(parseStoredKeys(json));
}

function parseStoredKeys(json: string): TokenKey[] {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      "The token keys kept in the store are not valid JSON. Restore them from a backup, or configure token keys explicitly.",
      { cause: err },
    );
  }
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      'The token keys kept in the store are not of the form {"keys": [{"id", "secret"}]}. Restore them from a backup, or configure token keys explicitly.',
    );
  }
  return keys as TokenKey[];
}

function checkKeys(keys: unknown): TokenKey[] {
  if (!Array.isArray(keys) || keys.length === 0) {
    throw invalid(
      "the key list is empty; list at least one key, or leave the keys out so one is generated and kept in the store.",
    );
  }
  const seen = new Set<string>();
  for (const [i, key] of keys.entries()) {
    const { id, secret } = (key ?? {}) as Partial<Record<keyof TokenKey, unknown>>;
    if (typeof id !== "string" || !KEY_ID.test(id)) {
      throw invalid(
        `key ${i + 1} has id ${describeId(id)}; an id is 1 to 64 letters, digits, "_", "." or "-", starting with a letter or digit.`,
      );
    }
    if (seen.has(id)) throw invalid(`the key id "${id}" is listed twice; give each key its own id.`);
    seen.add(id);
    if (typeof secret !== "string" || secret.length === 0) {
      throw invalid(`key "${id}" has no secret; give it one (generateTokenKey makes a good one).`);
    }
  }
  return keys as TokenKey[];
}

function checkRetired(retired: unknown): Set<string> {
  if (retired === undefined) return new Set();
  if (!Array.isArray(retired) || !retired.every((id) => typeof id === "string")) {
    throw invalid("retired must be a list of key ids.");
  }
  return new Set(retired);
}

/** The HMAC key bytes of a secret. Error messages name the key, never the secret. */
function decodeSecret(key: TokenKey): Buffer {
  if (key.secret.startsWith(BASE64_PREFIX)) {
    const text = key.secret.slice(BASE64_PREFIX.length);
    const bytes = Buffer.from(text, "base64");
    // Buffer.from skips characters outside the alphabet; a round trip proves nothing was skipped.
    if (!BASE64.test(text) || bytes.toString("base64").replace(/=+$/, "") !== text.replace(/=+$/, "")) {
      throw invalid(`the secret of key "${key.id}" starts with "base64:" but the rest is not base64.`);
    }
    if (bytes.length < MIN_SECRET_BYTES) {
      throw invalid(
        `the secret of key "${key.id}" is ${bytes.length} bytes; use at least ${MIN_SECRET_BYTES} (32 random bytes are recommended).`,
      );
    }
    return bytes;
  }
  if (key.secret.length < MIN_SECRET_CHARS) {
    throw invalid(
      `the secret of key "${key.id}" is shorter than ${MIN_SECRET_CHARS} characters; use 32 random bytes, e.g. "base64:" and the output of \`openssl rand -base64 32\`.`,
    );
  }
  return Buffer.from(key.secret, "utf8");
}

function describeId(id: unknown): string {
  return typeof id === "string" ? JSON.stringify(id.slice(0, 80)) : typeof id;
}

function invalid(problem: string): LonghaulError {
  return new LonghaulError("CONFIG_INVALID", `Token keys: ${problem}`);
}
