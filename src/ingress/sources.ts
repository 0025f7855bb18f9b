import { LonghaulError } from "../core/errors.ts";
import { github } from "./github.ts";
import { googHmac } from "./goog-hmac.ts";
import { jwt } from "./jwt.ts";
import { DEFAULT_TOLERANCE_S, type Scheme, type Verifier } from "./scheme.ts";
import { slack } from "./slack.ts";
import type { SourceConfig } from "./source-config.ts";
import { standardWebhooks } from "./standard-webhooks.ts";
import { stripe } from "./stripe.ts";

export type { SourceConfig };

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
  /**
   * `confirm_with_provider` as configured; null: decided by `checkSources` (on when the
   * verifier leaves the body unsigned and the provider can be asked).
   */
  confirmWithProvider: boolean | null;
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
  "token_header",
  "confirm_with_provider",
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
  const confirm = c.confirm_with_provider;
  if (confirm !== undefined && typeof confirm !== "boolean") {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${name}": "confirm_with_provider" is true or false; got ${JSON.stringify(confirm)}.`,
    );
  }
  return {
    name,
    provider: c.provider,
    scheme: scheme.name,
    verifier: scheme.create({ ...c, name, tolerance_s: toleranceS }),
    toleranceS,
    bodyLimit,
    confirmWithProvider: confirm ?? null,
  };
}

/**
 * The names of the sources whose events are confirmed with their provider, and a check of
 * what the sources need of the rest of the configuration; throws `CONFIG_INVALID`.
 * `canAsk(provider)` says whether a provider of that name is registered with `status`
 * (undefined: none of that name is registered on this node). `dedupeHorizonMs` must cover
 * every source's replay window, or a replayed token would no longer be recognised.
 */
export function checkSources(
  sources: ReadonlyMap<string, Source>,
  canAsk: (provider: string) => boolean | undefined,
  dedupeHorizonMs: number,
): Set<string> {
  const confirming = new Set<string>();
  for (const s of sources.values()) {
    const window = s.verifier.replayWindowS;
    if (window !== undefined && dedupeHorizonMs < window * 1000) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `Source "${s.name}" accepts a token for ${window} s (max_age_s plus tolerance_s), longer than inbox.dedupe_horizon_s (${Math.floor(dedupeHorizonMs / 1000)} s): a token replayed after its first delivery was pruned would pass as new. Raise inbox.dedupe_horizon_s or lower max_age_s.`,
      );
    }
    const askable = canAsk(s.provider);
    if (s.confirmWithProvider === true && askable === false) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `Source "${s.name}" sets confirm_with_provider, but provider "${s.provider}" has no status call to confirm with; set confirm_with_provider: false, or use a provider that can report a job's state.`,
      );
    }
    if (s.confirmWithProvider ?? (s.verifier.bodyUnsigned === true && askable === true))
      confirming.add(s.name);
  }
  return confirming;
}
