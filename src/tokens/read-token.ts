import { LonghaulError } from "../core/errors.ts";
import type { ReadScope } from "../core/read-scope.ts";
import type { Keyring } from "./keyring.ts";
import { READ_PURPOSE, signPayload, type TokenWords, verifySigned } from "./token.ts";

/**
 * Read tokens (ARCHITECTURE §4.5): short-lived, read-only bearer tokens that a tenant's
 * backend mints with its API key (`POST /v1/tokens`) and hands to a browser, which reads one
 * task, or the tasks of one user, and follows their events, and does nothing else.
 *
 * The same format, keyring and checks as the capability tokens of callback and approval
 * links (./token.ts), with purpose `read`:
 *
 *   {"k":key id,"tn":tenant,"p":"read","t":task | "ui":user id,"e":expiry s}
 *
 * The purpose is signed, so neither kind passes for the other: a read token at a callback
 * URL, or a callback token as a read token, is refused with TOKEN_SCOPE once its MAC matched.
 */

export interface ReadTokenClaims {
  keyId: string;
  tenantId: string;
  scope: ReadScope;
  /** Milliseconds since the epoch, whole seconds (minting rounds down). */
  expiresAt: number;
}

const WORDS: TokenWords = { thing: "read token", again: "Mint a new one (POST /v1/tokens)." };

/** A read token for `claims`, signed with the keyring's active key. */
export function mintReadToken(keyring: Keyring, claims: Omit<ReadTokenClaims, "keyId">): string {
  const scope = "taskId" in claims.scope ? { t: claims.scope.taskId } : { ui: claims.scope.userId };
  const payload = {
    k: keyring.activeKeyId,
    tn: claims.tenantId,
    p: READ_PURPOSE,
    ...scope,
    e: Math.floor(claims.expiresAt / 1000),
  };
  return signPayload(keyring, payload);
}

/**
 * The claims of a read token: TOKEN_MALFORMED, TOKEN_KEY_UNKNOWN, TOKEN_INVALID or
 * TOKEN_EXPIRED as for any token, then TOKEN_SCOPE for a genuine token of another purpose.
 */
export function verifyReadToken(keyring: Keyring, token: string, nowMs: number): ReadTokenClaims {
  const p = verifySigned(keyring, token, nowMs, WORDS);
  if (p.p !== READ_PURPOSE) {
    throw new LonghaulError(
      "TOKEN_SCOPE",
      "This is the token of a callback or approval link: it opens that one wait, and reads nothing. Mint a read token (POST /v1/tokens).",
    );
  }
  return {
    keyId: p.k,
    tenantId: p.tn as string,
    scope: typeof p.t === "string" ? { taskId: p.t } : { userId: p.ui as string },
    expiresAt: p.e * 1000,
  };
}

/**
 * Whether a bearer credential has a token's shape (`v1.<payload>.<mac>`) rather than an API
 * key's (`lh_…`, no dots): which check it goes to, not whether it is genuine.
 */
export const looksLikeToken = (credential: string): boolean =>
  credential.startsWith("v1.") && credential.split(".").length === 3;
