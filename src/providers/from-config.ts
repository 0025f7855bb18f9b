import { LonghaulError } from "../core/errors.ts";
import { geminiProvider } from "./gemini/gemini-provider.ts";
import { httpProvider } from "./http/http-provider.ts";
import { isObject } from "./json-client.ts";
import { openaiProvider } from "./openai/openai-provider.ts";
import type { Provider } from "./provider.ts";
import { simProvider } from "./sim/sim-provider.ts";

/** One `providers` entry of the configuration file, as users write it. */
export interface ProviderConfig {
  /** `sim`, `openai`, `gemini` or `http`; default: the entry's name. */
  kind?: string;
  base_url?: string;
  api_key?: string;
  /** The name of the environment variable that holds the API key. */
  api_key_env?: string;
  [k: string]: unknown;
}

const kinds = ["sim", "openai", "gemini", "http"] as const;

/** The keys an entry of each kind takes; any other is refused by name. */
const COMMON_KEYS = ["kind", "base_url", "api_key", "api_key_env", "timeout_ms", "enqueued_tokens"];
const KEYS: Record<(typeof kinds)[number], readonly string[]> = {
  sim: COMMON_KEYS,
  openai: COMMON_KEYS,
  gemini: COMMON_KEYS,
  http: [...COMMON_KEYS, "headers", "create_path", "status_path", "cancel_path"],
};

/**
 * A `Provider` object given in the configuration in place of a config entry: told apart by
 * its shape (a `create` function). It keeps its own adapter; its `name` must be its entry's.
 */
function isProviderObject(entry: unknown): entry is Provider {
  return isObject(entry) && typeof entry.create === "function";
}

/**
 * Builds the providers a configuration names; each is named after its entry, which is the
 * name sources refer to. An entry may be a `Provider` object of your own, used as it is. `sim` and `http` need `base_url`; `openai` and `gemini` need an
 * API key (`api_key`, or `api_key_env` naming a variable of `env`). `http` also takes
 * `create_path`, `status_path`, `cancel_path` and `headers`, and sends an API key, when
 * given, as `Authorization: Bearer`. Every kind takes `timeout_ms`, and `enqueued_tokens`: the
 * most tokens the provider may hold enqueued for us per model, e.g. `{ "gpt-4o-mini": 2000000 }`
 * (provider admission, ARCHITECTURE §4.8).
 */
export function providersFromConfig(
  config: Record<string, ProviderConfig | Provider>,
  env: Record<string, string | undefined> = process.env,
): Provider[] {
  if (!isObject(config))
    throw new LonghaulError("CONFIG_INVALID", '"providers" must be an object of entries.');
  return Object.entries(config).map(([name, entry]) =>
    isProviderObject(entry) ? custom(name, entry) : build(name, entry, env),
  );
}

function custom(name: string, provider: Provider): Provider {
  const bad = (why: string): never => {
    throw new LonghaulError("CONFIG_INVALID", `Provider "${name}" in the config ${why}.`);
  };
  if (typeof provider.parseEvent !== "function") return bad("has create() but no parseEvent()");
  if (provider.name !== name) {
    return bad(`is an object named "${provider.name}"; list it under its own name`);
  }
  return provider;
}

function build(name: string, entry: unknown, env: Record<string, string | undefined>): Provider {
  const provider = buildAdapter(name, entry, env);
  const budgets = (entry as ProviderConfig).enqueued_tokens;
  if (budgets === undefined) return provider;
  if (
    !isObject(budgets) ||
    !Object.values(budgets).every((v) => typeof v === "number" && Number.isSafeInteger(v) && v > 0)
  ) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Provider "${name}" in the config needs enqueued_tokens to be an object of models to positive whole numbers of tokens, such as { "gpt-4o-mini": 2000000 }.`,
    );
  }
  return { ...provider, enqueuedTokens: { ...(budgets as Record<string, number>) } };
}

function buildAdapter(name: string, entry: unknown, env: Record<string, string | undefined>): Provider {
  const bad = (why: string): never => {
    throw new LonghaulError("CONFIG_INVALID", `Provider "${name}" in the config ${why}.`);
  };
  if (!isObject(entry)) return bad('must be an object such as { "base_url": "…" }');
  const kind = entry.kind ?? name;
  if (typeof kind !== "string" || !(kinds as readonly string[]).includes(kind)) {
    return bad(
      `has kind ${JSON.stringify(kind)}; known kinds: ${kinds.join(", ")} (set "kind" when the name is not one of them)`,
    );
  }
  const known = KEYS[kind as (typeof kinds)[number]];
  for (const key of Object.keys(entry)) {
    if (!known.includes(key))
      return bad(`has unknown key "${key}"; a ${kind} entry takes ${known.join(", ")}`);
  }
  const text = (field: string): string | undefined => {
    const v = entry[field];
    if (v === undefined) return undefined;
    return typeof v === "string" && v !== "" ? v : bad(`needs ${field} to be a non-empty string`);
  };
  const baseUrl = text("base_url");
  const timeoutMs = entry.timeout_ms;
  if (timeoutMs !== undefined && (typeof timeoutMs !== "number" || !(timeoutMs > 0))) {
    return bad("needs timeout_ms to be a positive number of milliseconds");
  }
  const common = { name, ...(timeoutMs === undefined ? {} : { timeoutMs }) };

  const apiKey = (): string | undefined => {
    const direct = text("api_key");
    if (direct !== undefined) return direct;
    const variable = text("api_key_env");
    if (variable === undefined) return undefined;
    const value = env[variable];
    return value === undefined || value === ""
      ? bad(`names api_key_env ${variable}, which is not set`)
      : value;
  };
  const requiredKey = (): string =>
    apiKey() ?? bad('needs an API key: set "api_key", or "api_key_env" to the variable that holds it');
  const requiredUrl = (): string => baseUrl ?? bad('needs "base_url", where its API lives');

  switch (kind) {
    case "sim":
      return simProvider({ ...common, baseUrl: requiredUrl() });
    case "openai":
      return openaiProvider({ ...common, apiKey: requiredKey(), ...(baseUrl ? { baseUrl } : {}) });
    case "gemini":
      return geminiProvider({ ...common, apiKey: requiredKey(), ...(baseUrl ? { baseUrl } : {}) });
    default: {
      const key = apiKey();
      const headers = entry.headers ?? {};
      if (!isObject(headers) || !Object.values(headers).every((v) => typeof v === "string")) {
        return bad("needs headers to be an object of strings");
      }
      const createPath = text("create_path");
      const statusPath = text("status_path");
      const cancelPath = text("cancel_path");
      return httpProvider({
        ...common,
        baseUrl: requiredUrl(),
        headers: {
          ...(headers as Record<string, string>),
          ...(key ? { authorization: `Bearer ${key}` } : {}),
        },
        ...(createPath ? { createPath } : {}),
        ...(statusPath ? { statusPath } : {}),
        ...(cancelPath ? { cancelPath } : {}),
      });
    }
  }
}
