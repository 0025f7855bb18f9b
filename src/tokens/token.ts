import { timingSafeEqual } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import type { Keyring } from "./keyring.ts";

/**
 * Capability tokens (ARCHITECTURE §4.5): `v1.<payload>.<mac>`, both parts base64url without
 * padding. The payload is compact JSON:
 *
 *   {"k":key id,"tn":tenant,"t":task,"s":step,"a":attempt,"p":purpose,"e":expiry s,"u"?:approver}
 *
 * The MAC is HMAC-SHA256, with the key the payload names, over the payload bytes: the
 * base64url-decoded bytes of the middle part, exactly as they travel. Only the canonical
 * base64url spelling of those bytes is accepted, so one token has one spelling and a
 * changed character can never decode to the same signed bytes.
 *
 * `verifyToken` checks shape → key id known → MAC (constant time) → expiry, and returns the
 * claims only once the MAC matched: nothing in a token is trusted before that, the tenant
 * least of all. Whether the step is still waiting with that attempt, and whether its task
 * was cancelled, is the caller's check against the store.
 */

/**
 * `approve` and `reject` links decide one way (one-click buttons); a `decide` link takes
 * either decision in its body (`approval_url`).
 */
export type TokenPurpose = "callback" | "approve" | "reject" | "decide";

export interface TokenClaims {
  /** The key that signed the token. */
  keyId: string;
  tenantId: string;
  taskId: string;
  stepId: string;
  /** The attempt of the step the token was minted for, from 1. */
  attempt: number;
  purpose: TokenPurpose;
  /** Milliseconds since the epoch. The token holds whole seconds: minting rounds down. */
  expiresAt: number;
  /** Who may use the token, for approvals addressed to one person. */
  approver?: string;
}

export const TOKEN_VERSION = "v1";
/** Longer input is refused before it is split or decoded. */
export const MAX_TOKEN_LENGTH = 2048;

const PURPOSES: ReadonlySet<string> = new Set<TokenPurpose>(["callback", "approve", "reject", "decide"]);
const MAX_TEXT_LENGTH = 256;
const MAX_KEY_ID_LENGTH = 64;
/** The last second a `Date` can hold, so `e * 1000` is always a valid time. */
const MAX_EXPIRY_S = 8_640_000_000_000;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The payload as it travels. */
interface Payload {
  k: string;
  tn: string;
  t: string;
  s: string;
  a: number;
  p: TokenPurpose;
  e: number;
  u?: string;
}

const FIELDS: ReadonlySet<string> = new Set(["k", "tn", "t", "s", "a", "p", "e", "u"]);

/** A token for `claims`, signed with the keyring's active key. */
export function mintToken(keyring: Keyring, claims: Omit<TokenClaims, "keyId">): string {
  const payload: Payload = {
    k: keyring.activeKeyId,
    tn: claims.tenantId,
    t: claims.taskId,
    s: claims.stepId,
    a: claims.attempt,
    p: claims.purpose,
    e: Math.floor(claims.expiresAt / 1000),
  };
  if (claims.approver !== undefined) payload.u = claims.approver;
  // The same rules as verification, so a minted token always passes the shape check.
  const problem = payloadProblem(payload);
  if (problem !== undefined) {
    throw new LonghaulError("VALIDATION_FAILED", `Cannot mint a token: ${problem}.`);
  }
  const bytes = Buffer.from(JSON.stringify(payload), "utf8");
  const mac = keyring.hmac(payload.k, bytes);
  if (mac === undefined) {
    throw new LonghaulError("INTERNAL", "The keyring's active key does not sign; rebuild the keyring.");
  }
  const token = `${TOKEN_VERSION}.${bytes.toString("base64url")}.${mac.toString("base64url")}`;
  if (token.length > MAX_TOKEN_LENGTH) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `Cannot mint a token: it would be ${token.length} characters, over the ${MAX_TOKEN_LENGTH} allowed; use shorter ids.`,
    );
  }
  return token;
}

/**
 * The claims of `token` if it is well formed, signed by a key of `keyring`, and not expired
 * at `nowMs`. Fails with TOKEN_MALFORMED, TOKEN_KEY_UNKNOWN, TOKEN_INVALID or TOKEN_EXPIRED,
 * checked in that order; any input, however broken, fails with one of these.
 */
export function verifyToken(keyring: Keyring, token: string, nowMs: number): TokenClaims {
  const { payload, signed, mac } = parseToken(token);

  const expected = keyring.hmac(payload.k, signed);
  if (expected === undefined) {
    throw new LonghaulError(
      "TOKEN_KEY_UNKNOWN",
      "This link was signed with a key this deployment no longer accepts. Ask for a new link.",
    );
  }
  // Length first: timingSafeEqual throws on a mismatch, and the length of a MAC is no secret.
  if (!(mac.length === expected.length && timingSafeEqual(mac, expected))) {
    throw new LonghaulError(
      "TOKEN_INVALID",
      "This link's signature does not match: it was altered, or it was not issued by this deployment. Use the link exactly as it was sent, or ask for a new one.",
    );
  }

  const claims = toClaims(payload);
  // Written so that a NaN clock counts as expired rather than as forever valid.
  if (!(nowMs < claims.expiresAt)) {
    throw new LonghaulError(
      "TOKEN_EXPIRED",
      `This link expired at ${new Date(claims.expiresAt).toISOString()}. Ask for a new link.`,
      { details: { expiresAt: claims.expiresAt } },
    );
  }
  return claims;
}

/** The shape check: three parts, known version, canonical base64url, a payload of the right types. */
function parseToken(token: unknown): { payload: Payload; signed: Buffer; mac: Buffer } {
  if (typeof token !== "string" || token.length === 0) throw malformed("it is empty");
  if (token.length > MAX_TOKEN_LENGTH) throw malformed(`it is longer than ${MAX_TOKEN_LENGTH} characters`);
  const parts = token.split(".");
  if (parts.length !== 3) throw malformed("it does not have three parts separated by dots");
  const [version, payloadText, macText] = parts as [string, string, string];
  if (version !== TOKEN_VERSION) throw malformed(`its version is not ${TOKEN_VERSION}`);
  const signed = decodeBase64url(payloadText);
  const mac = decodeBase64url(macText);
  if (signed === undefined || mac === undefined) throw malformed("a part is not base64url");
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(signed));
  } catch {
    throw malformed("its payload is not JSON");
  }
  const problem = payloadProblem(value);
  if (problem !== undefined) throw malformed(problem);
  return { payload: value as Payload, signed, mac };
}

/** Bytes of an unpadded base64url string in its one canonical spelling, else `undefined`. */
function decodeBase64url(text: string): Buffer | undefined {
  if (!BASE64URL.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64url");
  // Rejects a dangling character and non-zero unused low bits, which decode leniently.
  return bytes.toString("base64url") === text ? bytes : undefined;
}

/** What is wrong with a payload, in words fit for an error message; `undefined` if nothing. */
function payloadProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return "the payload is not a JSON object";
  }
  const p = value as Record<string, unknown>;
  for (const field of Object.keys(p)) {
    if (!FIELDS.has(field)) return "the payload has a field that is not part of the format";
  }
  if (!isText(p.k, MAX_KEY_ID_LENGTH)) return `the key id (k) must be 1 to ${MAX_KEY_ID_LENGTH} characters`;
  if (!isText(p.tn)) return `the tenant id (tn) must be 1 to ${MAX_TEXT_LENGTH} characters`;
  if (!isText(p.t)) return `the task id (t) must be 1 to ${MAX_TEXT_LENGTH} characters`;
  if (!isText(p.s)) return `the step id (s) must be 1 to ${MAX_TEXT_LENGTH} characters`;
  if (!Number.isSafeInteger(p.a) || (p.a as number) < 1) return "the attempt (a) must be an integer from 1";
  if (typeof p.p !== "string" || !PURPOSES.has(p.p)) {
    return 'the purpose (p) must be "callback", "approve", "reject" or "decide"';
  }
  if (!Number.isSafeInteger(p.e) || (p.e as number) < 0 || (p.e as number) > MAX_EXPIRY_S) {
    return "the expiry (e) must be a whole number of seconds since the epoch";
  }
  if (p.u !== undefined && !isText(p.u)) return `the approver (u) must be 1 to ${MAX_TEXT_LENGTH} characters`;
  return undefined;
}

function isText(v: unknown, max = MAX_TEXT_LENGTH): v is string {
  return typeof v === "string" && v.length > 0 && v.length <= max;
}

function toClaims(p: Payload): TokenClaims {
  const claims: TokenClaims = {
    keyId: p.k,
    tenantId: p.tn,
    taskId: p.t,
    stepId: p.s,
    attempt: p.a,
    purpose: p.p,
    expiresAt: p.e * 1000,
  };
  if (p.u !== undefined) claims.approver = p.u;
  return claims;
}

function malformed(reason: string): LonghaulError {
  return new LonghaulError(
    "TOKEN_MALFORMED",
    `This link does not hold a valid token (${reason}); it may have been cut short when it was copied. Use the complete link as it was sent, or ask for a new one.`,
    { details: { reason } },
  );
}
