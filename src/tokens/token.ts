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
const READ_FIELDS: ReadonlySet<string> = new Set(["k", "tn", "p", "t", "ui", "e"]);
/** Characters of an unpadded base64url HMAC-SHA256: a shorter MAC part was cut short. */
const MAC_CHARS = 43;

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
  return signPayload(keyring, payload);
}

/**
 * @internal A token of `payload`, which names the keyring's active key. The same shape rules
 * as verification, so a minted token always passes the shape check.
 */
export function signPayload(keyring: Keyring, payload: { k: string }): string {
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
 * checked in that order; any input, however broken, fails with one of these. A read token
 * (./read-token.ts), genuine as it may be, opens no wait: TOKEN_SCOPE.
 */
export function verifyToken(keyring: Keyring, token: string, nowMs: number): TokenClaims {
  const payload = verifySigned(keyring, token, nowMs, LINK);
  if (payload.p === READ_PURPOSE) {
    throw new LonghaulError(
      "TOKEN_SCOPE",
      "This is a read token: it reads a task and follows its events, and completes no callback or approval.",
    );
  }
  return toClaims(payload as unknown as Payload);
}

/** How a failure names what it checked: a link handed out for a wait, or a read token. */
export interface TokenWords {
  thing: string;
  again: string;
}
const LINK: TokenWords = { thing: "link", again: "Ask for a new link." };

/** The purpose (`p`) of a read token; every other purpose is a capability link's. */
export const READ_PURPOSE = "read";

/**
 * @internal The checks every kind of token shares: shape → key id known → MAC (constant
 * time) → expiry. Returns the payload only once its MAC matched.
 */
export function verifySigned(
  keyring: Keyring,
  token: string,
  nowMs: number,
  words: TokenWords,
): Record<string, unknown> & { k: string; e: number } {
  const { payload, signed, mac } = parseToken(token, words);

  const expected = keyring.hmac(payload.k, signed);
  if (expected === undefined) {
    throw new LonghaulError(
      "TOKEN_KEY_UNKNOWN",
      `This ${words.thing} was signed with a key this deployment no longer accepts. ${words.again}`,
    );
  }
  // A MAC of another length, or a second spelling of one (./README.md, one token has one
  // spelling), is a signature that does not match, however close to the right one it is.
  // Length first: timingSafeEqual throws on a mismatch, and the length of a MAC is no secret.
  if (!(mac.canonical && mac.bytes.length === expected.length && timingSafeEqual(mac.bytes, expected))) {
    throw new LonghaulError(
      "TOKEN_INVALID",
      `This ${words.thing}'s signature does not match: it was altered, or it was not issued by this deployment. Use the ${words.thing} exactly as it was sent, or ${words.again.charAt(0).toLowerCase()}${words.again.slice(1)}`,
    );
  }

  const expiresAt = payload.e * 1000;
  // Written so that a NaN clock counts as expired rather than as forever valid.
  if (!(nowMs < expiresAt)) {
    throw new LonghaulError(
      "TOKEN_EXPIRED",
      `This ${words.thing} expired at ${new Date(expiresAt).toISOString()}. ${words.again}`,
      { details: { expiresAt } },
    );
  }
  return payload;
}

/**
 * The shape check: three parts, known version, canonical base64url payload of the right
 * types, and a MAC part of base64url characters, at least as long as a MAC. A shorter one
 * was cut short (TOKEN_MALFORMED); a MAC part of the right length that is not the signature,
 * even a second spelling of it, is for the MAC check to refuse (TOKEN_INVALID).
 */
function parseToken(
  token: unknown,
  words: TokenWords,
): {
  payload: Record<string, unknown> & { k: string; e: number };
  signed: Buffer;
  mac: { bytes: Buffer; canonical: boolean };
} {
  const malformed = (reason: string) => malformedToken(reason, words);
  if (typeof token !== "string" || token.length === 0) throw malformed("it is empty");
  if (token.length > MAX_TOKEN_LENGTH) throw malformed(`it is longer than ${MAX_TOKEN_LENGTH} characters`);
  const parts = token.split(".");
  if (parts.length !== 3) throw malformed("it does not have three parts separated by dots");
  const [version, payloadText, macText] = parts as [string, string, string];
  if (version !== TOKEN_VERSION) throw malformed(`its version is not ${TOKEN_VERSION}`);
  const signed = decodeBase64url(payloadText);
  if (signed === undefined || !BASE64URL.test(macText)) throw malformed("a part is not base64url");
  if (macText.length < MAC_CHARS) throw malformed("its signature part is shorter than a signature");
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(signed));
  } catch {
    throw malformed("its payload is not JSON");
  }
  const problem = payloadProblem(value);
  if (problem !== undefined) throw malformed(problem);
  const bytes = Buffer.from(macText, "base64url");
  return {
    payload: value as Record<string, unknown> & { k: string; e: number },
    signed,
    mac: { bytes, canonical: bytes.toString("base64url") === macText },
  };
}

/** Bytes of an unpadded base64url string in its one canonical spelling, else `undefined`. */
function decodeBase64url(text: string): Buffer | undefined {
  if (!BASE64URL.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64url");
  // Rejects a dangling character and non-zero unused low bits, which decode leniently.
  return bytes.toString("base64url") === text ? bytes : undefined;
}

/** What is wrong with a payload of either kind, in words fit for an error message; `undefined` if nothing. */
function payloadProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return "the payload is not a JSON object";
  }
  const p = value as Record<string, unknown>;
  return p.p === READ_PURPOSE ? readPayloadProblem(p) : capabilityPayloadProblem(p);
}

function capabilityPayloadProblem(p: Record<string, unknown>): string | undefined {
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
  const expiry = expiryProblem(p.e);
  if (expiry !== undefined) return expiry;
  if (p.u !== undefined && !isText(p.u)) return `the approver (u) must be 1 to ${MAX_TEXT_LENGTH} characters`;
  return undefined;
}

/** A read token's payload: `{"k","tn","p":"read","t" | "ui","e"}`, exactly one of task and user. */
function readPayloadProblem(p: Record<string, unknown>): string | undefined {
  for (const field of Object.keys(p)) {
    if (!READ_FIELDS.has(field)) return "the payload has a field that is not part of the format";
  }
  if (!isText(p.k, MAX_KEY_ID_LENGTH)) return `the key id (k) must be 1 to ${MAX_KEY_ID_LENGTH} characters`;
  if (!isText(p.tn)) return `the tenant id (tn) must be 1 to ${MAX_TEXT_LENGTH} characters`;
  if ((p.t === undefined) === (p.ui === undefined)) return "a read token names a task (t) or a user (ui)";
  if (p.t !== undefined && !isText(p.t)) return `the task id (t) must be 1 to ${MAX_TEXT_LENGTH} characters`;
  if (p.ui !== undefined && !isText(p.ui))
    return `the user id (ui) must be 1 to ${MAX_TEXT_LENGTH} characters`;
  return expiryProblem(p.e);
}

function expiryProblem(e: unknown): string | undefined {
  if (!Number.isSafeInteger(e) || (e as number) < 0 || (e as number) > MAX_EXPIRY_S) {
    return "the expiry (e) must be a whole number of seconds since the epoch";
  }
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

function malformedToken(reason: string, words: TokenWords): LonghaulError {
  return new LonghaulError(
    "TOKEN_MALFORMED",
    `This ${words.thing} does not hold a valid token (${reason}); it may have been cut short when it was copied. Use the complete ${words.thing} as it was sent, or ${words.again.charAt(0).toLowerCase()}${words.again.slice(1)}`,
    { details: { reason } },
  );
}
