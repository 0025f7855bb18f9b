import { createHash } from "node:crypto";
import { isIP } from "node:net";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from "jose";
import { LonghaulError } from "../core/errors.ts";
import {
  anyEqual,
  bodySha256,
  header,
  type Scheme,
  type SchemeSource,
  toleranceOf,
  type Verified,
  type Verifier,
  type VerifyRequest,
} from "./scheme.ts";

/**
 * A signed JWT, as sent by Pub/Sub push subscriptions (`Authorization: Bearer <token>`) and
 * by Gemini's per-request (dynamic) webhooks, which keep the Standard Webhooks headers and
 * put the token in `webhook-signature` (a `v1,`-style prefix is dropped). The token is
 * checked against a JWKS, fetched from `jwks_url` (cached, refetched at most every 30 s when
 * an unknown key id shows up) or given inline as `jwks`. The algorithms are pinned to
 * asymmetric ones, so neither `none` nor an HMAC keyed with a public key can pass.
 *
 * A token is not bound to a request by its signature alone, so the scheme also requires:
 * - `iss`, `aud`, `exp` and `iat`, with the token no older than `max_age_s` and its `iat`
 *   not in the future, both with the source's tolerance as clock skew, so a captured token
 *   is good for minutes, not for the hour Google's tokens live. The default is 300 s, and
 *   60 s for a Google issuer's token in `webhook-signature` (its token comes with the
 *   delivery, so a minute covers the way here and the tolerance covers clock skew);
 * - the SHA-256 of the raw body in the claim `body_hash_claim` (default `body_sha256`; off
 *   for Google's issuers, whose tokens carry none), so a captured token cannot carry
 *   another body. When it is off, a `body_sha256` claim is still checked if present.
 *
 * The event id of a token from `webhook-signature` is `jwt:<sha256 of the token>`, with the
 * body bound to it in the inbox (`bindsBody`): the same token and body again are a
 * duplicate, the same token with another body is refused (TOKEN_REPLAYED), and the unsigned
 * `webhook-id` is only logged, so a replay can neither pick its event id nor pre-empt a
 * later event by taking its id. A Gemini retry under the same `webhook-id` with a fresh
 * token is then a second event; applying a job event twice changes nothing (job states
 * only move forward).
 *
 * A token from `Authorization` (Pub/Sub push) is not bound to one body: Pub/Sub attaches
 * one token to many push requests for a while ("tokens attached to requests sent to push
 * endpoints may be up to an hour old",
 * https://cloud.google.com/pubsub/docs/authenticate-push-subscriptions; Google's push
 * samples note that messages handled by one push server "share the same token for a limited
 * time window"). Its event id is `jwt:<jti>:<sha256 of the body>`, else the body hash, and
 * what such a body says is confirmed with the provider (`confirm_with_provider`). A source
 * that names its one header in `token_header` reads no other, so a token captured from
 * `webhook-signature` cannot be replayed as a Bearer token to escape its body binding.
 */

const NAME = "jwt";
const DEFAULT_ALGORITHMS = ["RS256", "ES256", "EdDSA"];
const ASYMMETRIC = new Set([
  ...["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"],
  ...["ES256", "ES384", "ES512", "EdDSA", "Ed25519"],
]);
export const DEFAULT_MAX_AGE_S = 300;
/** The default `max_age_s` of a Google issuer's token in `webhook-signature` (Gemini). */
export const GOOGLE_SIGNATURE_MAX_AGE_S = 60;
export const DEFAULT_BODY_HASH_CLAIM = "body_sha256";
/** Hosts of the issuers whose tokens carry no body hash: Pub/Sub push and Gemini. */
const GOOGLE_ISSUER_HOST = /(^|\.)(google\.com|googleapis\.com)$/;
const BEARER = /^Bearer +(\S+) *$/i;
/** More entries than this in webhook-signature are not looked at: each costs a verification. */
const MAX_SIGNATURE_ENTRIES = 4;
/** Key-resolution failures that are the token's doing, not the key set's. */
const TOKEN_KEY_ERRORS = new Set([
  errors.JWKSNoMatchingKey.code,
  errors.JWKSMultipleMatchingKeys.code,
  errors.JOSENotSupported.code,
]);

interface Checks {
  keys: JWTVerifyGetKey;
  algorithms: string[];
  issuer: string | string[];
  audience: string | string[];
  toleranceS: number;
  /** How old a token may be (its `iat`), by where it came from. */
  maxAgeS: Record<Carrier, number>;
  /** The claim that must hold the body's SHA-256, or null when none is required. */
  bodyHashClaim: string | null;
  /** The one place tokens are read from (`token_header`), or null for either. */
  carrier: Carrier | null;
}

/** Where the token came from, which decides the event id and the wording of refusals. */
type Carrier = "webhook-signature" | "Authorization";

export const jwt: Scheme = {
  name: NAME,
  create(source: SchemeSource): Verifier {
    const issuer = expectedClaim(source, "issuer");
    const checks: Checks = {
      keys: keySetOf(source),
      algorithms: algorithmsOf(source),
      issuer,
      audience: expectedClaim(source, "audience"),
      toleranceS: toleranceOf(source),
      maxAgeS: maxAgeOf(source, issuer),
      bodyHashClaim: bodyHashClaimOf(source, issuer),
      carrier: carrierOf(source),
    };
    const maxAgeS = Math.max(...Object.values(checks.maxAgeS));
    return {
      verify: (req) => verifyJwt(req, checks),
      bodyUnsigned: checks.bodyHashClaim === null,
      replayWindowS: maxAgeS + checks.toleranceS,
    };
  },
};

async function verifyJwt(req: VerifyRequest, checks: Checks): Promise<Verified> {
  const { tokens, carrier } = tokensOf(req.headers, checks.carrier);
  let payload: JWTPayload | null = null;
  let accepted = "";
  let firstRefusal: LonghaulError | null = null;
  for (const token of tokens) {
    try {
      ({ payload } = await jwtVerify(token, checks.keys, {
        algorithms: checks.algorithms,
        issuer: checks.issuer,
        audience: checks.audience,
        requiredClaims: ["exp", "iat"],
        maxTokenAge: checks.maxAgeS[carrier],
        clockTolerance: checks.toleranceS,
        currentDate: new Date(req.nowMs),
      }));
      accepted = token;
      break;
    } catch (err) {
      const refused = refusal(err, carrier, checks);
      if (refused.code === "JWKS_UNAVAILABLE") throw refused;
      firstRefusal ??= refused;
    }
  }
  if (!payload) throw firstRefusal!;
  checkBodyHash(payload, req.body, checks.bodyHashClaim);
  // jose has checked that iat is a number.
  const timestampS = Math.floor(payload.iat as number);
  if (carrier === "webhook-signature") {
    const webhookId = header(req.headers, "webhook-id");
    return {
      eventId: `jwt:${createHash("sha256").update(accepted).digest("hex")}`,
      timestampS,
      bindsBody: true,
      ...(webhookId ? { deliveryId: webhookId.slice(0, 200) } : {}),
    };
  }
  const jti = typeof payload.jti === "string" && payload.jti ? payload.jti : null;
  return { eventId: jti ? `jwt:${jti}:${bodySha256(req.body)}` : null, timestampS };
}

/**
 * The candidate tokens of a request: the entries of `webhook-signature` that look like a
 * compact JWS, each without its `version,` prefix; else the Bearer token of Authorization.
 */
function tokensOf(
  headers: VerifyRequest["headers"],
  only: Carrier | null,
): { tokens: string[]; carrier: Carrier } {
  const signature = only === "Authorization" ? undefined : header(headers, "webhook-signature");
  if (signature) {
    const tokens = signature
      .split(" ")
      .filter((entry) => entry !== "")
      .slice(0, MAX_SIGNATURE_ENTRIES)
      .map((entry) => entry.slice(entry.lastIndexOf(",") + 1))
      .filter((entry) => entry.split(".").length === 3);
    if (tokens.length > 0) return { tokens, carrier: "webhook-signature" };
  }
  const authorization = only === "webhook-signature" ? undefined : header(headers, "authorization");
  const bearer = authorization ? BEARER.exec(authorization)?.[1] : undefined;
  if (bearer) return { tokens: [bearer], carrier: "Authorization" };
  if (signature) {
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      "webhook-signature holds no JWT. A Gemini project (static) webhook is signed with HMAC: configure its source with scheme standard-webhooks and the whsec_ secret; scheme jwt is for per-request (dynamic) webhooks, whose webhook-signature is a JWT.",
      { details: { scheme: NAME } },
    );
  }
  throw new LonghaulError(
    "SIGNATURE_MISSING",
    only === "webhook-signature"
      ? "The request has no JWT in webhook-signature, the only place this source reads its token from (token_header)."
      : only === "Authorization"
        ? "The request has no Authorization: Bearer <JWT>, the only place this source reads its token from (token_header)."
        : authorization
          ? "Authorization holds no Bearer token; the sender must send Authorization: Bearer <JWT>."
          : "The request carries no token: a JWT sender sets Authorization: Bearer <JWT>, or webhook-signature: <JWT> (Gemini per-request webhooks).",
    { details: { scheme: NAME } },
  );
}

function checkBodyHash(payload: JWTPayload, body: Buffer, required: string | null): void {
  const claim = required ?? DEFAULT_BODY_HASH_CLAIM;
  const claimed = payload[claim];
  if (claimed === undefined) {
    if (required === null) return;
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      `The token has no "${claim}" claim; this source requires the SHA-256 of the exact body bytes in it (lower-case hex or unpadded base64url), so a token cannot be reused with another body. If the sender cannot send one, set "body_hash_claim": false on the source.`,
      { details: { scheme: NAME } },
    );
  }
  const hex = bodySha256(body);
  const b64url = Buffer.from(hex, "hex").toString("base64url");
  if (typeof claimed !== "string" || !anyEqual([claimed], [hex, b64url])) {
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      `The token's ${claim} claim is not the SHA-256 of this body: the body was changed after signing, or the sender hashed something else (it must be the lower-case hex or unpadded base64url digest of the exact bytes sent).`,
      { details: { scheme: NAME } },
    );
  }
}

/** A jose failure as the 401 it means; a `LonghaulError` (keys unavailable) passes through. */
function refusal(err: unknown, carrier: Carrier, checks: Checks): LonghaulError {
  if (err instanceof LonghaulError) return err;
  const subject = `The token in ${carrier}`;
  const details = { scheme: NAME, carrier };
  const fail = (message: string) => new LonghaulError("SIGNATURE_INVALID", message, { cause: err, details });
  const outOfTolerance = (message: string) =>
    new LonghaulError("TIMESTAMP_OUT_OF_TOLERANCE", message, { cause: err, details });
  if (err instanceof errors.JWTExpired) {
    if (err.claim === "iat") {
      return outOfTolerance(
        `${subject} was issued (iat) more than max_age_s ${checks.maxAgeS[carrier]} s plus the ${checks.toleranceS} s tolerance ago; the sender must mint a fresh token for each delivery. If it legitimately reuses tokens, raise "max_age_s" on the source.`,
      );
    }
    return outOfTolerance(
      `${subject} has expired, beyond this source's clock tolerance; the sender must mint a fresh token (check its clock if it just did).`,
    );
  }
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === "check_failed" && (err.claim === "nbf" || err.claim === "iat")) {
      return outOfTolerance(
        `${subject} is dated in the future (${err.claim} is later than now plus the ${checks.toleranceS} s tolerance); check the sender's clock.`,
      );
    }
    if (err.reason === "missing") {
      return fail(
        err.claim === "iat"
          ? `${subject} has no "iat" claim; this source requires the issue time, so that a captured token is refused once it is older than max_age_s.`
          : `${subject} has no "${err.claim}" claim, which this source requires.`,
      );
    }
    if (err.reason === "invalid") {
      return fail(`${subject}'s "${err.claim}" claim must be a number of seconds since the epoch.`);
    }
    const setting = err.claim === "iss" ? "issuer" : err.claim === "aud" ? "audience" : null;
    return fail(
      `${subject}'s "${err.claim}" claim is not what this source expects${setting ? `; check "${setting}" in the source configuration` : ""}.`,
    );
  }
  if (err instanceof errors.JOSEAlgNotAllowed) {
    return fail(`${subject}'s alg is not one this source allows; set "algorithms" to what the sender uses.`);
  }
  if (err instanceof errors.JWKSNoMatchingKey) {
    return fail(
      `No key of this source's JWKS matches the kid and alg of the token in ${carrier}; the token was signed by another key, or the sender rotated to a key not published yet.`,
    );
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) {
    return fail(`${subject}'s signature does not verify against this source's JWKS.`);
  }
  return fail(`${subject} is not a well-formed signed JWT; send a compact JWS (header.payload.signature).`);
}

function keySetOf(source: SchemeSource): JWTVerifyGetKey {
  const { jwks, jwks_url: url } = source;
  if ((jwks === undefined) === (url === undefined)) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${source.name}" (scheme jwt) needs exactly one of "jwks_url" (the sender's published key set) or "jwks" (the key set inline).`,
    );
  }
  if (url !== undefined) return keysOrUnavailable(createRemoteJWKSet(jwksUrl(source.name, url)));
  return keysOrUnavailable(localKeySet(source.name, jwks));
}

/**
 * The key set's URL: `https:`, or `http:` to this machine only (a key server beside the
 * process, a test), since a key set fetched in the clear can be swapped on the way.
 */
function jwksUrl(name: string, url: unknown): URL {
  const parsed = typeof url === "string" && URL.canParse(url) ? new URL(url) : null;
  const ok =
    parsed !== null &&
    (parsed.protocol === "https:" || (parsed.protocol === "http:" && isLoopbackHostname(parsed.hostname)));
  if (!ok) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      parsed?.protocol === "http:"
        ? `Source "${name}": "jwks_url" must use https: a key set fetched over plain http can be replaced in transit, and every token signed with the replacement would pass. Plain http is accepted only for loopback hosts (localhost, 127.0.0.0/8, [::1]); got ${JSON.stringify(url)}.`
        : `Source "${name}": "jwks_url" must be an https URL of a JSON Web Key Set; got ${JSON.stringify(url)}.`,
    );
  }
  return parsed!;
}

/** `localhost`, 127.0.0.0/8 or ::1, as a URL's hostname spells them. */
function isLoopbackHostname(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === "localhost" || host === "[::1]") return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

function localKeySet(name: string, jwks: unknown): JWTVerifyGetKey {
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${name}": "jwks" must be a JSON Web Key Set, {"keys": [...]}, with at least one key.`,
    );
  }
  for (const key of keys as Record<string, unknown>[]) {
    if (typeof key !== "object" || key === null || key.kty === "oct" || "d" in key) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `Source "${name}": "jwks" must hold only public keys (RSA, EC or OKP without "d"); a secret or private key has no place in it.`,
      );
    }
  }
  try {
    return createLocalJWKSet(jwks as JSONWebKeySet);
  } catch (err) {
    throw new LonghaulError("CONFIG_INVALID", `Source "${name}": "jwks" is not a usable JSON Web Key Set.`, {
      cause: err,
    });
  }
}

/**
 * Reports a key set that cannot be fetched or read as `JWKS_UNAVAILABLE` (503, so the sender
 * retries), keeping the failures that are the token's doing for `refusal` to answer 401.
 */
function keysOrUnavailable(keys: JWTVerifyGetKey): JWTVerifyGetKey {
  return async (header, token) => {
    try {
      return await keys(header, token);
    } catch (err) {
      if (err instanceof errors.JOSEError && TOKEN_KEY_ERRORS.has(err.code)) throw err;
      throw new LonghaulError(
        "JWKS_UNAVAILABLE",
        "The keys to check this request's token with could not be loaded right now; retry later. The operator should check that the source's JWKS is reachable and valid.",
        { cause: err, details: { scheme: NAME } },
      );
    }
  };
}

function algorithmsOf(source: SchemeSource): string[] {
  const algorithms = source.algorithms ?? DEFAULT_ALGORITHMS;
  if (
    !Array.isArray(algorithms) ||
    algorithms.length === 0 ||
    !algorithms.every((a) => typeof a === "string" && ASYMMETRIC.has(a))
  ) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${source.name}": "algorithms" must list asymmetric JWS algorithms (${[...ASYMMETRIC].join(", ")}); "none" and HMAC (HS*) are never accepted.`,
    );
  }
  return [...algorithms];
}

function expectedClaim(source: SchemeSource, setting: "issuer" | "audience"): string | string[] {
  const value = source[setting];
  const ok =
    (typeof value === "string" && value.length > 0) ||
    (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "string" && v.length > 0));
  if (!ok) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${source.name}" (scheme jwt) needs "${setting}": the ${setting === "issuer" ? "iss" : "aud"} its tokens must carry.`,
    );
  }
  return value as string | string[];
}

/**
 * How old a token may be, by carrier: `max_age_s` when set; else 300 s, and 60 s for a
 * Google issuer's token in `webhook-signature`. A Pub/Sub token (Authorization) keeps 300 s:
 * Pub/Sub reuses its tokens for a while (see the top of this file), so a shorter default
 * would refuse honest deliveries.
 */
function maxAgeOf(source: SchemeSource, issuer: string | string[]): Record<Carrier, number> {
  if (source.max_age_s === undefined) {
    const google = (Array.isArray(issuer) ? issuer : [issuer]).some(isGoogleIssuer);
    return {
      "webhook-signature": google ? GOOGLE_SIGNATURE_MAX_AGE_S : DEFAULT_MAX_AGE_S,
      Authorization: DEFAULT_MAX_AGE_S,
    };
  }
  const maxAgeS = source.max_age_s;
  if (!Number.isSafeInteger(maxAgeS) || maxAgeS < 1) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${source.name}": "max_age_s" is how old a token (its iat) may be, a whole number of seconds, 1 or more; got ${JSON.stringify(source.max_age_s)}.`,
    );
  }
  return { "webhook-signature": maxAgeS, Authorization: maxAgeS };
}

/**
 * The claim that must carry the body's SHA-256: the configured one, none for `false`, and
 * by default `body_sha256` unless the issuer is Google's, whose tokens (Pub/Sub push,
 * Gemini) hash no body.
 */
function bodyHashClaimOf(source: SchemeSource, issuer: string | string[]): string | null {
  const claim = source.body_hash_claim;
  if (claim === undefined) {
    const issuers = Array.isArray(issuer) ? issuer : [issuer];
    return issuers.some(isGoogleIssuer) ? null : DEFAULT_BODY_HASH_CLAIM;
  }
  if (claim === false) return null;
  if (typeof claim === "string" && /^[\x21-\x7e]{1,100}$/.test(claim)) return claim;
  throw new LonghaulError(
    "CONFIG_INVALID",
    `Source "${source.name}": "body_hash_claim" names the token claim holding the SHA-256 of the body (e.g. "body_sha256"), or is false when the sender sends none; got ${JSON.stringify(claim)}.`,
  );
}

/**
 * Where a source reads its token (`token_header`): a source that accepts both lets a token
 * captured from `webhook-signature`, which is bound to one body, be replayed as a Bearer
 * token, which is not (Pub/Sub reuses those); naming the one its sender uses closes that.
 */
function carrierOf(source: SchemeSource): Carrier | null {
  const value = source.token_header;
  if (value === undefined) return null;
  if (value === "webhook-signature") return "webhook-signature";
  if (value === "authorization") return "Authorization";
  throw new LonghaulError(
    "CONFIG_INVALID",
    `Source "${source.name}": "token_header" is "webhook-signature" (Gemini per-request webhooks) or "authorization" (Pub/Sub push, Authorization: Bearer); got ${JSON.stringify(value)}.`,
  );
}

function isGoogleIssuer(issuer: string): boolean {
  const url = URL.canParse(issuer)
    ? new URL(issuer)
    : URL.canParse(`https://${issuer}`)
      ? new URL(`https://${issuer}`)
      : null;
  return url !== null && GOOGLE_ISSUER_HOST.test(url.hostname);
}
