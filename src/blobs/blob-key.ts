import { LonghaulError } from "../core/errors.ts";

/** The longest key a store accepts, in characters. */
export const BLOB_KEY_MAX_LENGTH = 512;

const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/**
 * A key is one or more `/`-separated segments of letters, digits, `.`, `_` and `-`, none empty
 * and none starting with `.`: so no `..`, no absolute path, no backslash, and no key can name
 * a store's own temporary files (which start with `.`). At most `BLOB_KEY_MAX_LENGTH` long.
 */
export function checkBlobKey(key: string): string {
  if (typeof key !== "string" || key.length === 0 || key.length > BLOB_KEY_MAX_LENGTH) {
    throw invalid(key, `must be 1 to ${BLOB_KEY_MAX_LENGTH} characters`);
  }
  for (const segment of key.split("/")) {
    if (!SEGMENT.test(segment)) {
      throw invalid(
        key,
        "must be `/`-separated segments of letters, digits, '.', '_' and '-', none empty and none starting with '.'",
      );
    }
  }
  return key;
}

/** A prefix for `list`: a key's beginning, so the same characters, possibly ending in `/`, or empty. */
export function checkBlobPrefix(prefix: string): string {
  if (prefix === "") return prefix;
  checkBlobKey(prefix.endsWith("/") ? prefix.slice(0, -1) : prefix);
  return prefix;
}

function invalid(key: unknown, why: string): LonghaulError {
  const shown = typeof key === "string" ? JSON.stringify(key.slice(0, 80)) : typeof key;
  return new LonghaulError("BLOB_KEY_INVALID", `The blob key ${shown} is refused: a key ${why}.`, {
    details: { key: typeof key === "string" ? key.slice(0, 80) : null },
  });
}
