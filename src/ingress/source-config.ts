import type { JSONWebKeySet } from "jose";

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
  /**
   * `jwt`: the one header tokens are read from, `webhook-signature` (Gemini per-request
   * webhooks) or `authorization` (Bearer, Pub/Sub push). Default: either.
   */
  token_header?: "webhook-signature" | "authorization";
  /**
   * An event from this source does not move its job by what its body says: the worker asks
   * the provider for the job's state (`status`, as the reconciler does) and applies that
   * answer. Default on for a `jwt` source whose tokens carry no body hash (Google's issuers)
   * when the provider has `status`, else off (ARCHITECTURE §4.3).
   */
  confirm_with_provider?: boolean;
}
