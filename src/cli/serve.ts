import { parseArgs } from "node:util";
import { pino } from "pino";
import { createLonghaul } from "../app.ts";
import { LonghaulError } from "../core/errors.ts";
import type { TaskType } from "../core/task-type.ts";
import { graphTask } from "../graph/graph-task.ts";
import { safeLoggerOptions } from "../http/log-redaction.ts";
import { providersFromConfig } from "../providers/from-config.ts";
import { secretBoxFrom } from "../secrets/secret-box.ts";
import { engineOptions, readConfig } from "./config.ts";
import { onShutdown } from "./shutdown.ts";

/** `longhaul serve`: the production server; store from LONGHAUL_DATABASE_URL, types from the config. */
export async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: "string" },
      role: { type: "string", default: "all" },
      port: { type: "string", default: process.env.LONGHAUL_PORT || process.env.PORT || "8787" },
      host: { type: "string", default: process.env.LONGHAUL_HOST || "0.0.0.0" },
    },
  });
  const role = values.role;
  if (role !== "all" && role !== "api" && role !== "worker") {
    throw new LonghaulError("CONFIG_INVALID", `--role must be all, api or worker, not "${role}".`);
  }
  const config = await readConfig(values.config);
  requireSecretKey(config.tokens?.keys !== undefined);
  const providers = providersFromConfig(config.providers ?? {});
  const app = await createLonghaul({
    logger: pino(safeLoggerOptions(process.env.LONGHAUL_LOG_LEVEL ?? "info")),
    taskTypes: withGraph(config.taskTypes ?? []),
    providers,
    sources: config.sources ?? {},
    role,
    ...engineOptions(config),
    ...(config.tokens ? { tokens: config.tokens } : {}),
    ...(config.outbound ? { outbound: config.outbound } : {}),
    ...(config.public_url ? { publicUrl: config.public_url } : {}),
    ...(config.metrics ? { metrics: config.metrics } : {}),
  });
  const url = await app.listen({ port: Number(values.port), host: values.host });
  onShutdown(() => app.close());
  app.log.info({ url, role, metrics: app.metricsUrl ?? undefined }, "longhaul serve is listening");
}

/**
 * The config's task types and `graph`, which runs declarative graphs, as under `dev`; a config
 * that registers its own `graph` keeps it.
 */
export function withGraph(types: TaskType[]): TaskType[] {
  return types.some((t) => t.name === graphTask.name) ? types : [...types, graphTask];
}

/**
 * Generated token keys live in the store; in production they, and outbound endpoint
 * secrets, are kept encrypted, so `serve` wants an encryption key unless token keys come
 * from the config. CONFIG_INVALID.
 */
export function requireSecretKey(tokenKeysConfigured: boolean, env: NodeJS.ProcessEnv = process.env): void {
  if (tokenKeysConfigured || secretBoxFrom(undefined, env).enabled) return;
  throw new LonghaulError(
    "CONFIG_INVALID",
    "No LONGHAUL_SECRET_KEY is set, so the generated token keys would be stored in plain text. Set LONGHAUL_SECRET_KEY to 32 random bytes (`openssl rand -base64 32`), or list token keys under tokens.keys in the config.",
  );
}
