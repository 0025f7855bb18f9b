import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { LonghaulConfig } from "../config/define-config.ts";
import { LonghaulError } from "../core/errors.ts";
import type { LimitsConfig } from "../core/limits.ts";
import { ConfigSettings } from "../core/settings.ts";
import { checkSettings } from "../core/settings-check.ts";
import type { StorageUrlsConfig } from "../core/storage-urls.ts";

export { defineConfig, type LonghaulConfig } from "../config/define-config.ts";

/**
 * Where the environment set a key, by key (`waits.default_timeout_s`): what a message says of its
 * variable (`LONGHAUL_METRICS_PUBLIC: true, false, 1 or 0, in any case`), and the variable's text.
 */
export type EnvOrigins = ReadonlyMap<string, { origin: string; text: string }>;

/**
 * Checks a configuration against the one settings schema (src/core/settings.ts): an unknown
 * key, at the top or inside a block, or a value out of its range is CONFIG_INVALID naming the
 * key, and the variable when the environment set it (`fromEnv`), else the file.
 */
export function checkConfig(
  raw: unknown,
  file = "the config",
  fromEnv: EnvOrigins = new Map(),
): LonghaulConfig {
  checkSettings(ConfigSettings, raw, {
    name: file,
    place: `in ${file}`,
    origin: (key) => fromEnv.get(key)?.origin ?? `in ${file}`,
    text: (key) => fromEnv.get(key)?.text,
  });
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

/** The blocks whose keys a variable may set, beside `public_url`. */
const ENV_BLOCKS = ["tokens", "reconciler", "waits", "inbox", "outbound", "metrics", "limits"] as const;

interface SettingNode {
  type?: string;
  properties?: Record<string, SettingNode>;
}

/**
 * The keys a variable of the environment may set, as `LONGHAUL_<BLOCK>_<KEY>` in capitals (README
 * "Configuration"), with the type the schema gives each: every key of the blocks above and
 * `public_url`. `sources`, `providers`, `tokens.keys` and the task lists are structured and live
 * in the file only.
 */
const ENV_KEYS: readonly { block: string | null; key: string; type: string | undefined }[] = (() => {
  const blocks = (ConfigSettings as SettingNode).properties!;
  return [
    { block: null, key: "public_url", type: blocks.public_url!.type },
    ...ENV_BLOCKS.flatMap((block) =>
      Object.entries(blocks[block]!.properties!)
        .filter(([key]) => !(block === "tokens" && key === "keys"))
        .map(([key, node]) => ({ block, key, type: node.type })),
    ),
  ];
})();

/** Every variable that sets a config key, by the key it sets: `waits.default_timeout_s` → `LONGHAUL_WAITS_DEFAULT_TIMEOUT_S`. */
export const envVariables = (): Map<string, string> =>
  new Map(ENV_KEYS.map(({ block, key }) => [block ? `${block}.${key}` : key, envName(block, key)]));

/** The variable that overrides a key: `LONGHAUL_PUBLIC_URL`, `LONGHAUL_WAITS_DEFAULT_TIMEOUT_S`, … */
export const envName = (block: string | null, key: string): string =>
  `LONGHAUL_${block ? `${block}_` : ""}${key}`.toUpperCase();

/**
 * A variable's value, read as its key's type: text as it is; a boolean from `true`, `false`, `1`
 * or `0` in any case; a number or a list as JSON. Text that reads as none of these is kept as
 * text, for the check to refuse naming the variable.
 */
function envValue(name: string, text: string, type: string | undefined): unknown {
  if (type === "string") return text;
  if (type === "boolean") {
    const t = text.trim().toLowerCase();
    return t === "true" || t === "1" ? true : t === "false" || t === "0" ? false : text;
  }
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
 * not empty, wins over its key. The values are checked with the file's (`checkConfig`), which
 * names the variable of each one it refuses (`fromEnv`).
 */
export function applyEnv(
  config: LonghaulConfig,
  env: NodeJS.ProcessEnv = process.env,
): { config: LonghaulConfig; fromEnv: EnvOrigins } {
  const out: Record<string, unknown> = { ...config };
  const fromEnv = new Map<string, { origin: string; text: string }>();
  for (const { block, key, type } of ENV_KEYS) {
    const name = envName(block, key);
    const text = env[name];
    if (text === undefined || text === "") continue;
    const value = envValue(name, text, type);
    const origin = type === "boolean" ? `${name}: true, false, 1 or 0, in any case` : name;
    fromEnv.set(block ? `${block}.${key}` : key, { origin, text });
    if (block === null) {
      out[key] = value;
      continue;
    }
    const inner = out[block];
    // A block the file holds as something other than an object stays so, for the check to refuse.
    if (inner !== undefined && (typeof inner !== "object" || inner === null || Array.isArray(inner)))
      continue;
    out[block] = { ...inner, [key]: value };
  }
  return { config: out as LonghaulConfig, fromEnv };
}

/**
 * The configuration `dev` and `serve` run with: the file `configPath` finds (none: `{}`), the
 * environment's settings over it, all checked, and `tasks` merged into `taskTypes`.
 */
export async function readConfig(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): Promise<LonghaulConfig> {
  const file = configPath(flag, env, cwd);
  const loaded = file ? await loadConfig(file) : {};
  if (Array.isArray(loaded)) throw new LonghaulError("CONFIG_INVALID", `${file} must export an object.`);
  const { config: merged, fromEnv } = applyEnv(loaded, env);
  const config = checkConfig(merged, file ?? "the environment", fromEnv);
  const { tasks, ...rest } = config;
  return tasks === undefined ? rest : { ...rest, taskTypes: [...(rest.taskTypes ?? []), ...tasks] };
}

/** The engine options a config file sets, as `createLonghaul` takes them. */
export function engineOptions(config: LonghaulConfig): {
  pollAfterMs?: number;
  dedupeHorizonMs?: number;
  limits?: LimitsConfig;
  defaultTimeoutMs?: number;
  storageUrls?: StorageUrlsConfig;
} {
  const out: {
    pollAfterMs?: number;
    dedupeHorizonMs?: number;
    limits?: LimitsConfig;
    defaultTimeoutMs?: number;
    storageUrls?: StorageUrlsConfig;
  } = {};
  // The config is checked (`checkConfig`), and the options again by createLonghaul.
  if (config.limits !== undefined) out.limits = config.limits;
  if (config.storage_urls !== undefined) out.storageUrls = config.storage_urls;
  const poll = config.reconciler?.poll_after_s;
  const horizon = config.inbox?.dedupe_horizon_s;
  const waitTimeout = config.waits?.default_timeout_s;
  if (waitTimeout !== undefined) out.defaultTimeoutMs = waitTimeout * 1000;
  if (poll !== undefined) out.pollAfterMs = poll * 1000;
  if (horizon !== undefined) out.dedupeHorizonMs = horizon * 1000;
  return out;
}

const defaults = ["longhaul.config.ts", "longhaul.config.js", "longhaul.config.json"];

const typescriptFile = /\.[cm]?tsx?$/;

/** Registers a loader that lets `import()` read TypeScript; by default tsx's, an optional peer dependency. */
export type TypeScriptLoader = () => Promise<unknown>;

// Both hooks, as `node --import tsx` does: a `.ts` file outside a `"type": "module"` package is
// loaded as CommonJS.
const tsxLoader: TypeScriptLoader = () =>
  Promise.all([
    import("tsx/esm/api").then(({ register }) => register()),
    import("tsx/cjs/api").then(({ register }) => register()),
  ]);
let registered: Promise<unknown> | undefined;

/**
 * Imports a config module. A TypeScript one (`.ts`, `.mts`, `.cts`) is imported once tsx's
 * loader is registered; tsx is loaded here, lazily, so a `.js`/`.mjs`/`.json` config (and the
 * compiled CLI itself) never loads it. tsx is an optional peer dependency: without it a
 * TypeScript config is CONFIG_INVALID saying what to install.
 */
async function importConfigModule(
  abs: string,
  file: string,
  loader: TypeScriptLoader | undefined,
): Promise<unknown> {
  if (typescriptFile.test(abs)) {
    if (!loader) registered ??= tsxLoader();
    const registering = loader ? loader() : registered;
    try {
      await registering;
    } catch (err) {
      if (!loader) registered = undefined;
      throw new LonghaulError(
        "CONFIG_INVALID",
        `${file} is TypeScript, which longhaul reads through tsx, and tsx could not be loaded (${(err as Error).message.split("\n")[0]}). Install it beside longhaul (\`npm install -D tsx\`), or write the config as a .js or .mjs file.`,
        { cause: err },
      );
    }
  }
  const mod = (await import(pathToFileURL(abs).href)) as { default?: { __esModule?: boolean } };
  // A `.ts` file outside a `"type": "module"` package is compiled to CommonJS, whose exports
  // object arrives as the default export: its own `default` is the config.
  return mod.default?.__esModule === true ? mod.default : mod;
}

/**
 * Loads `path`, or the first default file that exists, or an empty config. `typescript`
 * replaces the loader of TypeScript configs (tsx's), for tests.
 */
export async function loadConfig(
  path: string | undefined,
  opts: { typescript?: TypeScriptLoader } = {},
): Promise<LonghaulConfig> {
  const file = path ?? defaults.find((f) => existsSync(f));
  if (!file) return {};
  const abs = resolve(file);
  if (!existsSync(abs)) throw new LonghaulError("CONFIG_INVALID", `Config file ${file} does not exist.`);
  let raw: unknown;
  try {
    raw = abs.endsWith(".json")
      ? JSON.parse(readFileSync(abs, "utf8"))
      : ((await importConfigModule(abs, file, opts.typescript)) as { default?: unknown }).default;
  } catch (err) {
    if (err instanceof LonghaulError) throw err;
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
