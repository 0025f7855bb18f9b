import { pino } from "pino";
import { createLonghaul } from "../app.ts";
import { LonghaulError } from "../core/errors.ts";
import type { TaskType } from "../core/task-type.ts";
import { graphTask } from "../graph/graph-task.ts";
import { safeLoggerOptions } from "../http/log-redaction.ts";
import { providersFromConfig } from "../providers/from-config.ts";
import { secretBoxFrom } from "../secrets/secret-box.ts";
import { engineOptions, readConfig } from "./config.ts";
import { listenPort } from "./listen-port.ts";
import { onShutdown } from "./shutdown.ts";
import { databaseUrl } from "./store.ts";

export interface ServeOptions {
  config?: string;
  role: "all" | "api" | "worker";
  port: number;
  host: string;
  databaseUrl?: string;
  logLevel: string;
  sources: Record<string, string | undefined>;
}

/** `longhaul serve`: the production server; store from --database-url, types from the config. */
export async function serve(o: ServeOptions): Promise<void> {
  const role = o.role;
  const config = await readConfig(o.config);
  requireSecretKey(config.tokens?.keys !== undefined);
  const providers = providersFromConfig(config.providers ?? {});
  const app = await createLonghaul({
    taskTypes: withGraph(config.taskTypes ?? []),
    providers,
    sources: config.sources ?? {},
    role,
    databaseUrl: databaseUrl(o.databaseUrl),
    logger: pino(safeLoggerOptions(o.logLevel)),
    ...engineOptions(config),
    ...(config.tokens ? { tokens: config.tokens } : {}),
    ...(config.outbound ? { outbound: config.outbound } : {}),
    ...(config.public_url ? { publicUrl: config.public_url } : {}),
    ...(config.metrics ? { metrics: config.metrics } : {}),
    ...(config.notify ? { notify: config.notify } : {}),
    ...(config.notifiers ? { notifiers: config.notifiers } : {}),
  });
  const url = await app.listen({ port: listenPort(o), host: o.host });
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
