import type { JSONWebKeySet } from "jose";
import { LonghaulError } from "../core/errors.ts";
import { github } from "./github.ts";
import { googHmac } from "./goog-hmac.ts";
import { jwt } from "./jwt.ts";
import { DEFAULT_TOLERANCE_S, type Scheme, type Verifier } from "./scheme.ts";
import { slack } from "./slack.ts";
import { standardWebhooks } from "./standard-webhooks.ts";
import { stripe } from "./stripe.ts";

/** A configured webhook endpoint `/hooks/:name` (ARCHITECTURE §4.3). */
export interface Source {
  name: string;
  provider: string;
  /** The name of the verification scheme. */
  scheme: string;
  /** Made once from the configuration: keys are decoded at start, not per request. */
  verifier: Verifier;
  /** How far a signed timestamp may be from now, in seconds, both ways. */
  toleranceS: number;
  /** The largest body accepted, in bytes; a larger one is refused before it is read. */
  bodyLimit: number;
}

/** The `sources` entry of the configuration file, as users write it. */
export interface SourceConfig {
  provider: string;
  /** Default `standard-webhooks`. */
  scheme?: string;
  /** Required by the HMAC schemes; several during a rotation. Not used by `jwt`. */
  secrets?: string[];
  tolerance_s?: number;
  body_limit?: number;
  /** `jwt`: the URL of the sender's JSON Web Key Set. */
  jwks_url?: string;
  /** `jwt`: the JSON Web Key Set inline, instead of `jwks_url`. */
  jwks?: JSONWebKeySet;
  /** `jwt`: the `iss` the tokens must carry (one of them, when a list). */
  issuer?: string | string[];
  /** `jwt`: the `aud` the tokens must carry (one of them, when a list). */
  audience?: string | string[];
  /** `jwt`: the accepted JWS algorithms; default RS256, ES256, EdDSA. */
  algorithms?: string[];
  /** `jwt`: how old a token (its `iat`) may be, in seconds, plus `tolerance_s`; default 300. */
  max_age_s?: number;
  /**
   * `jwt`: the claim that must hold the SHA-256 of the raw body (lower-case hex or unpadded
   * base64url), or `false` when the sender sends none. Default `body_sha256`, except `false`
   * when the issuer is Google's (Pub/Sub push, Gemini).
   */
  body_hash_claim?: string | false;
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Every verification scheme a source may name. */
export const schemes: ReadonlyMap<string, Scheme> = new Map(
  [standardWebhooks, stripe, github, googHmac, jwt, slack].map((s) => [s.name, s]),
);

/** Every key a `sources` entry takes (some only with some schemes). */
const SOURCE_KEYS: readonly (keyof SourceConfig)[] = [
  "provider",
  "scheme",
  "secrets",
  "tolerance_s",
  "body_limit",
  "jwks_url",
  "jwks",
  "issuer",
  "audience",
  "algorithms",
  "max_age_s",
  "body_hash_claim",
];

/**
 * Checks a source's configuration and prepares its verifier; throws `CONFIG_INVALID`. An
 * unknown key is refused by name: a misspelt one (`secret` for `secrets`) would otherwise be
 * ignored in silence.
 */
export function buildSource(name: string, c: SourceConfig): Source {
  if (typeof c !== "object" || c === null || Array.isArray(c)) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${name}" must be an object such as { "provider": "…" }.`,
    );
  }
  for (const key of Object.keys(c)) {
    if (!(SOURCE_KEYS as readonly string[]).includes(key)) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `Source "${name}" has unknown key "${key}"; known keys: ${SOURCE_KEYS.join(", ")}.`,
      );
    }
  }
  const schemeName = c.scheme ?? "standard-webhooks";
  const scheme = schemes.get(schemeName);
  if (!scheme) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${name}" names scheme "${schemeName}"; known schemes: ${[...schemes.keys()].join(", ")}.`,
    );
  }
  if (typeof c.provider !== "string" || !c.provider) {
    throw new LonghaulError("CONFIG_INVALID", `Source "${name}" needs a "provider".`);
  }
  const toleranceS = c.tolerance_s ?? DEFAULT_TOLERANCE_S;
  if (!Number.isSafeInteger(toleranceS) || toleranceS < 0) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${name}": "tolerance_s" is a whole number of seconds, 0 or more; got ${JSON.stringify(c.tolerance_s)}.`,
    );
  }
  const bodyLimit = c.body_limit ?? DEFAULT_BODY_LIMIT;
  if (!Number.isSafeInteger(bodyLimit) || bodyLimit < 1) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${name}": "body_limit" is a whole number of bytes, 1 or more; got ${JSON.stringify(c.body_limit)}.`,
    );
  }
  return {
    name,
    provider: c.provider,
    scheme: scheme.name,
    verifier: scheme.create({ ...c, name, tolerance_s: toleranceS }),
    toleranceS,
    bodyLimit,
  };
}
