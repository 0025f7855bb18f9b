import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { LonghaulError } from "../core/errors.ts";
import { DEFAULT_LIMITS, type LimitsConfig } from "../core/limits.ts";
import type { TaskType } from "../core/task-type.ts";
import type { SourceConfig } from "../ingress/sources.ts";
import type { OutboundConfig } from "../outbound/settings.ts";
import type { ProviderConfig } from "../providers/from-config.ts";
import type { Provider } from "../providers/provider.ts";
import type { TokenKey } from "../tokens/keyring.ts";

/**
 * The configuration file (ARCHITECTURE §7): `.ts`, `.js`, `.mjs` (default export) or `.json`.
 * Keys are public: added, never renamed; an unknown one stops the start (`checkConfig`).
 */
export interface LonghaulConfig {
  sources?: Record<string, SourceConfig>;
  /**
   * Provider adapters by name, e.g. `{ "sim": { "base_url": "http://127.0.0.1:8788" },
   * "openai": { "api_key_env": "OPENAI_API_KEY" } }` (see src/providers/from-config.ts), or
   * a `Provider` object of your own under its name.
   */
  providers?: Record<string, ProviderConfig | Provider>;
  /** Capability token keys (first signs, all verify) and the default link lifetime. */
  tokens?: { keys?: TokenKey[]; ttl_s?: number };
  public_url?: string;
  /** A job with no terminal webhook after this long is polled through its provider. Default 60. */
  reconciler?: { poll_after_s?: number };
  /** A `step.job` or `step.waitForEvent` without a timeout ends after this long. Default 604800 (7 days). */
  waits?: { default_timeout_s?: number };
  /** How long delivered event ids are remembered for dedupe. Default 7 days. */
  inbox?: { dedupe_horizon_s?: number };
  /** Outbound webhooks: retry schedule in seconds, and whether private and loopback targets are allowed. */
  outbound?: OutboundConfig;
  /**
   * Rates per minute (`api_per_min`, `unauthenticated_per_min`, `hooks_per_min`,
   * `callbacks_per_min`, `approvals_per_min`; 0 turns one off), caps per tenant
   * (`sse_streams_per_tenant`, `webhook_endpoints_per_tenant`) and `signal_retention_s`.
   */
  limits?: LimitsConfig;
  /**
   * `GET /metrics`: behind the admin key on the API address by default (off without one);
   * `listen` ("127.0.0.1:9464") serves it without a key on an address of its own; `public: true`
   * opens it on the API address.
   */
  metrics?: { listen?: string; public?: boolean };
  taskTypes?: TaskType[];
  /** The same as `taskTypes`; both may be given. */
  tasks?: TaskType[];
}

/** Types a configuration file (`export default defineConfig({...})`); returns it as it is. */
export function defineConfig(config: LonghaulConfig): LonghaulConfig {
  return config;
}

/** The keys a configuration takes, and those of its blocks that are checked key by key. */
const KEYS: Record<keyof LonghaulConfig, readonly string[] | null> = {
  sources: null,
  providers: null,
  tokens: ["keys", "ttl_s"],
  public_url: null,
  reconciler: ["poll_after_s"],
  waits: ["default_timeout_s"],
  inbox: ["dedupe_horizon_s"],
  outbound: ["retry_schedule_s", "allow_private_networks", "timeout_s"],
  // Checked by resolveLimits, which names an unknown key too.
  limits: null,
  metrics: ["listen", "public"],
  taskTypes: null,
  tasks: null,
};

/**
 * Checks a loaded configuration's keys: an unknown one, at the top or inside a block, is
 * CONFIG_INVALID naming it (a misspelt key would otherwise be ignored in silence).
 */
export function checkConfig(raw: unknown, file = "the config"): LonghaulConfig {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new LonghaulError("CONFIG_INVALID", `${file} must be an object.`);
  }
  const known = Object.keys(KEYS);
  for (const [key, value] of Object.entries(raw)) {
    if (!Object.hasOwn(KEYS, key)) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `Unknown key "${key}" in ${file}; known keys: ${known.join(", ")}.`,
      );
    }
    const inner = KEYS[key as keyof LonghaulConfig];
    if (inner === null || value === undefined) continue;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new LonghaulError("CONFIG_INVALID", `"${key}" in ${file} must be an object.`);
    }
    for (const k of Object.keys(value)) {
      if (!inner.includes(k)) {
        throw new LonghaulError(
          "CONFIG_INVALID",
          `Unknown key "${key}.${k}" in ${file}; known keys of "${key}": ${inner.join(", ")}.`,
        );
      }
    }
  }
  for (const key of ["taskTypes", "tasks"] as const) {
    const list = (raw as LonghaulConfig)[key];
    if (list !== undefined && !Array.isArray(list)) {
      throw new LonghaulError("CONFIG_INVALID", `"${key}" in ${file} must be a list of task types.`);
    }
  }
  return raw as LonghaulConfig;
}

/** The files looked for in the working directory when neither --config nor LONGHAUL_CONFIG names one. */
export const DEFAULT_CONFIG_FILES = [
  "longhaul.config.ts",
  "longhaul.config.mts",
  "longhaul.config.js",
  "longhaul.config.mjs",
  "longhaul.config.json",
];

/** The configuration file to load: `--config`, else `LONGHAUL_CONFIG`, else the first default file in `cwd`. */
export function configPath(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): string | undefined {
  if (flag) return resolve(cwd, flag);
  if (env.LONGHAUL_CONFIG) return resolve(cwd, env.LONGHAUL_CONFIG);
  return DEFAULT_CONFIG_FILES.map((f) => resolve(cwd, f)).find((f) => existsSync(f));
}

/**
 * The keys a variable of the environment may set, as `LONGHAUL_<BLOCK>_<KEY>` in capitals (README
 * "Configuration"): every scalar or list key of the blocks above and `limits`. `sources`,
 * `providers`, `tokens.keys` and the task lists are structured and live in the file only.
 */
const ENV_KEYS: readonly (readonly [block: keyof LonghaulConfig | null, key: string])[] = [
  [null, "public_url"],
  ...(["tokens", "reconciler", "waits", "inbox", "outbound", "metrics"] as const).flatMap((block) =>
    (KEYS[block] ?? []).filter((k) => !(block === "tokens" && k === "keys")).map((k) => [block, k] as const),
  ),
  ...Object.keys(DEFAULT_LIMITS).map((k) => ["limits", k] as const),
];

/** The variable that overrides a key: `LONGHAUL_PUBLIC_URL`, `LONGHAUL_WAITS_DEFAULT_TIMEOUT_S`, … */
export const envName = (block: string | null, key: string): string =>
  `LONGHAUL_${block ? `${block}_` : ""}${key}`.toUpperCase();

/** A variable's value: JSON when it reads as JSON (numbers, booleans, lists), else the text. */
function envValue(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    if (/^[[{]/.test(text.trim())) {
      throw new LonghaulError("CONFIG_INVALID", `${name} is not valid JSON.`);
    }
    return text;
  }
}

/**
 * Settings taken from the environment over the file's: each variable of `ENV_KEYS`, when set and
 * not empty, wins over its key. The values are checked where the file's are.
 */
export function applyEnv(config: LonghaulConfig, env: NodeJS.ProcessEnv = process.env): LonghaulConfig {
  const out: Record<string, unknown> = { ...config };
  for (const [block, key] of ENV_KEYS) {
    const name = envName(block, key);
    const text = env[name];
    if (text === undefined || text === "") continue;
    // public_url and metrics.listen are text even when they would parse as JSON.
    const value = key === "public_url" || key === "listen" ? text : envValue(name, text);
    if (block === null) out[key] = value;
    else out[block] = { ...(out[block] as Record<string, unknown> | undefined), [key]: value };
  }
  return out as LonghaulConfig;
}

/**
 * The configuration `dev` and `serve` run with: the file `configPath` finds (none: `{}`),
 * its keys checked, the environment's settings over it, and `tasks` merged into `taskTypes`.
 */
export async function readConfig(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): Promise<LonghaulConfig> {
  const file = configPath(flag, env, cwd);
  const config = applyEnv(file ? checkConfig(await loadConfig(file), file) : {}, env);
  const { tasks, ...rest } = config;
  return tasks === undefined ? rest : { ...rest, taskTypes: [...(rest.taskTypes ?? []), ...tasks] };
}

/** The engine options a config file sets, as `createLonghaul` takes them. */
export function engineOptions(config: LonghaulConfig): {
  pollAfterMs?: number;
  dedupeHorizonMs?: number;
  limits?: LimitsConfig;
  defaultTimeoutMs?: number;
} {
  const out: {
    pollAfterMs?: number;
    dedupeHorizonMs?: number;
    limits?: LimitsConfig;
    defaultTimeoutMs?: number;
  } = {};
  // Checked, with defaults filled in, by createLonghaul.
  if (config.limits !== undefined) out.limits = config.limits;
  const poll = config.reconciler?.poll_after_s;
  const horizon = config.inbox?.dedupe_horizon_s;
  const waitTimeout = config.waits?.default_timeout_s;
  if (waitTimeout !== undefined) {
    out.defaultTimeoutMs = seconds("waits.default_timeout_s", waitTimeout) * 1000;
  }
  if (poll !== undefined) out.pollAfterMs = seconds("reconciler.poll_after_s", poll) * 1000;
  if (horizon !== undefined) out.dedupeHorizonMs = seconds("inbox.dedupe_horizon_s", horizon) * 1000;
  return out;
}

function seconds(key: string, v: unknown): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw new LonghaulError("CONFIG_INVALID", `${key} must be a positive number of seconds.`);
  }
  return v;
}

const defaults = ["longhaul.config.ts", "longhaul.config.js", "longhaul.config.json"];

const typescriptFile = /\.[cm]?tsx?$/;
let typescriptLoader: Promise<unknown> | undefined;

/**
 * Imports a config module. A TypeScript one (`.ts`, `.mts`, `.cts`) is imported once tsx's
 * loader is registered; tsx is loaded here, lazily, so a `.js`/`.mjs`/`.json` config (and the
 * compiled CLI itself) never loads it.
 */
async function importConfigModule(abs: string): Promise<unknown> {
  if (typescriptFile.test(abs)) {
    // Both hooks, as `node --import tsx` does: a `.ts` file outside a `"type": "module"`
    // package is loaded as CommonJS.
    typescriptLoader ??= Promise.all([
      import("tsx/esm/api").then(({ register }) => register()),
      import("tsx/cjs/api").then(({ register }) => register()),
    ]);
    await typescriptLoader;
  }
  const mod = (await import(pathToFileURL(abs).href)) as { default?: { __esModule?: boolean } };
  // A `.ts` file outside a `"type": "module"` package is compiled to CommonJS, whose exports
  // object arrives as the default export: its own `default` is the config.
  return mod.default?.__esModule === true ? mod.default : mod;
}

/** Loads `path`, or the first default file that exists, or an empty config. */
export async function loadConfig(path: string | undefined): Promise<LonghaulConfig> {
  const file = path ?? defaults.find((f) => existsSync(f));
  if (!file) return {};
  const abs = resolve(file);
  if (!existsSync(abs)) throw new LonghaulError("CONFIG_INVALID", `Config file ${file} does not exist.`);
  let raw: unknown;
  try {
    raw = abs.endsWith(".json")
      ? JSON.parse(readFileSync(abs, "utf8"))
      : ((await importConfigModule(abs)) as { default?: unknown }).default;
  } catch (err) {
    throw new LonghaulError("CONFIG_INVALID", `Could not load ${file}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (typeof raw !== "object" || raw === null) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `${file} must export an object (as its default export for .ts/.js).`,
    );
  }
  return raw as LonghaulConfig;
}
