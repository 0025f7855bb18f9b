import { createHash, randomBytes } from "node:crypto";

/** A new API key, `lh_…`: shown once, stored only as its hash (ARCHITECTURE §1). */
export function newApiKey(): string {
  return `lh_${randomBytes(24).toString("base64url")}`;
}

/** The last characters of a key: enough to tell keys apart in a list, useless to an attacker. */
export const keyHint = (key: string) => `…${key.slice(-4)}`;

/** The SHA-256 a key is stored and looked up as. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}
