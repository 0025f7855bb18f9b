import { createHash } from "node:crypto";
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
  requireHeaders,
  type Scheme,
  type SchemeSource,
  timingSafeEqualStr,
  toleranceOf,
  type Verified,
  type Verifier,
  type VerifyRequest,
} from "./scheme.ts";

/**
 * A signed JWT in `Authorization: Bearer <token>`, as sent by Pub/Sub push subscriptions
 * and Gemini per-request webhooks. The token is checked against a JWKS, fetched from
 * `jwks_url` (cached, refetched at most every 30 s when an unknown key id shows up) or given
 * inline as `jwks`. The algorithms are pinned to asymmetric ones, so neither `none` nor an
 * HMAC keyed with a public key can pass; `iss`, `aud` and `exp` are required and checked,
 * with the source's tolerance as clock skew. An optional `body_sha256` claim binds the token
 * to the raw body; without it (Pub/Sub push does not send one) the token authenticates the
 * sender, not the bytes. The event id is the token's `jti`.
 */

const NAME = "jwt";
const DEFAULT_ALGORITHMS = ["RS256", "ES256", "EdDSA"];
const ASYMMETRIC = new Set([
  ...["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"],
  ...["ES256", "ES384", "ES512", "EdDSA", "Ed25519"],
]);
const BEARER = /^Bearer +(\S+) *$/i;
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
}

export const jwt: Scheme = {
  name: NAME,
  create(source: SchemeSource): Verifier {
    const checks: Checks = {
      keys: keySetOf(source),
      algorithms: algorithmsOf(source),
      issuer: expectedClaim(source, "issuer"),
      audience: expectedClaim(source, "audience"),
      toleranceS: toleranceOf(source),
    };
    return { verify: (req) => verifyJwt(req, checks) };
  },
};

async function verifyJwt(req: VerifyRequest, checks: Checks): Promise<Verified> {
  const [authorization] = requireHeaders(
    req.headers,
    ["authorization"],
    NAME,
    "a JWT sender sets Authorization: Bearer <token>",
  );
  const token = BEARER.exec(authorization)?.[1];
  if (!token) {
    throw new LonghaulError(
      "SIGNATURE_MISSING",
      "Authorization holds no Bearer token; the sender must send Authorization: Bearer <JWT>.",
      { details: { scheme: NAME } },
    );
  }
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, checks.keys, {
      algorithms: checks.algorithms,
      issuer: checks.issuer,
      audience: checks.audience,
      requiredClaims: ["exp"],
      clockTolerance: checks.toleranceS,
      currentDate: new Date(req.nowMs),
    }));
  } catch (err) {
    throw refusal(err);
  }
  checkBodyHash(payload, req.body);
  return {
    eventId: typeof payload.jti === "string" && payload.jti ? payload.jti : null,
    timestampS:
      typeof payload.iat === "number" && Number.isFinite(payload.iat) ? Math.floor(payload.iat) : null,
  };
}

function checkBodyHash(payload: JWTPayload, body: Buffer): void {
  const claimed = payload.body_sha256;
  if (claimed === undefined) return;
  const actual = createHash("sha256").update(body).digest("hex");
  if (typeof claimed !== "string" || !timingSafeEqualStr(claimed, actual)) {
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      "The token's body_sha256 claim is not the SHA-256 of this body: the body was changed after signing, or the sender hashed something else (it must be the hex digest of the exact bytes sent).",
      { details: { scheme: NAME } },
    );
  }
}

/** A jose failure as the 401 it means; a `LonghaulError` (keys unavailable) passes through. */
function refusal(err: unknown): LonghaulError {
  if (err instanceof LonghaulError) return err;
  const fail = (message: string) =>
    new LonghaulError("SIGNATURE_INVALID", message, { cause: err, details: { scheme: NAME } });
  if (err instanceof errors.JWTExpired) {
    return new LonghaulError(
      "TIMESTAMP_OUT_OF_TOLERANCE",
      "The Bearer token has expired, beyond this source's clock tolerance; the sender must mint a fresh token (check its clock if it just did).",
      { cause: err, details: { scheme: NAME } },
    );
  }
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === "nbf" && err.reason === "check_failed") {
      return new LonghaulError(
        "TIMESTAMP_OUT_OF_TOLERANCE",
        "The Bearer token is not valid yet (nbf is in the future beyond the tolerance); check the sender's clock.",
        { cause: err, details: { scheme: NAME } },
      );
    }
    const setting = err.claim === "iss" ? "issuer" : err.claim === "aud" ? "audience" : null;
    return fail(
      err.reason === "missing"
        ? `The Bearer token has no "${err.claim}" claim, which this source requires.`
        : `The Bearer token's "${err.claim}" claim is not what this source expects${setting ? `; check "${setting}" in the source configuration` : ""}.`,
    );
  }
  if (err instanceof errors.JOSEAlgNotAllowed) {
    return fail(
      'The Bearer token\'s alg is not one this source allows; set "algorithms" to what the sender uses.',
    );
  }
  if (err instanceof errors.JWKSNoMatchingKey) {
    return fail(
      "No key of this source's JWKS matches the Bearer token's kid and alg; the token was signed by another key, or the sender rotated to a key not published yet.",
    );
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) {
    return fail("The Bearer token's signature does not verify against this source's JWKS.");
  }
  return fail(
    "The Bearer token is not a well-formed signed JWT; send a compact JWS (header.payload.signature).",
  );
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

function jwksUrl(name: string, url: unknown): URL {
  const parsed = typeof url === "string" && URL.canParse(url) ? new URL(url) : null;
  if (!parsed || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${name}": "jwks_url" must be an http(s) URL of a JSON Web Key Set; got ${JSON.stringify(url)}.`,
    );
  }
  return parsed;
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
