import type { FastifyInstance } from "fastify";
import { type Logger, pino } from "pino";
import { type Clock, systemClock } from "./core/clock.ts";
import { LonghaulError } from "./core/errors.ts";
import { type IdGenerator, ulidGenerator } from "./core/ids.ts";
import { type LimitsConfig, resolveLimits } from "./core/limits.ts";
import { DEFAULT_TIMEOUT_MS } from "./core/replay.ts";
import type { TaskType } from "./core/task-type.ts";
import { providerRegistry, taskTypeRegistry } from "./engine/registry.ts";
import { Worker, type WorkerOptions } from "./engine/worker.ts";
import type { EventStreamsOptions } from "./http/event-streams.ts";
import { safeLoggerOptions } from "./http/log-redaction.ts";
import { parseListen, startMetricsServer } from "./http/metrics-server.ts";
import { buildServer } from "./http/server.ts";
import { buildSource, type Source, type SourceConfig } from "./ingress/sources.ts";
import { Metrics } from "./metrics/metrics.ts";
import { type OutboundConfig, outboundSettings } from "./outbound/settings.ts";
import type { Provider } from "./providers/provider.ts";
import { SEALED_META_KEYS } from "./secrets/sealed-meta-keys.ts";
import { secretBoxFrom } from "./secrets/secret-box.ts";
import { openStore } from "./store/open-store.ts";
import type { Store } from "./store/store.ts";
import { CapabilityUrls } from "./tokens/capability-urls.ts";
import { type Keyring, keyringFromConfig, TOKEN_KEYS_META_KEY, type TokenKey } from "./tokens/keyring.ts";

export interface LonghaulOptions {
  /** `sqlite:path` or `postgres://…`; ignored when `store` is given. Default `sqlite:.longhaul/longhaul.db`. */
  databaseUrl?: string;
  store?: Store;
  taskTypes?: TaskType[];
  providers?: Provider[];
  sources?: Record<string, SourceConfig>;
  /** The base URL providers reach this deployment at; webhooks go to `<publicUrl>/hooks/<source>`. */
  publicUrl?: string;
  /** `all` (default), `api` (HTTP only) or `worker` (work loop only). */
  role?: "all" | "api" | "worker";
  worker?: WorkerOptions;
  /** Reconciler: a job with no terminal webhook after this long is polled. Default 60 s. */
  pollAfterMs?: number;
  /**
   * The deadline of a `step.job` or `step.waitForEvent` that sets no timeout, so every wait
   * has a durable deadline. Default 7 days (config `waits.default_timeout_s`).
   */
  defaultTimeoutMs?: number;
  /** How long inbox rows are kept for dedupe; must cover providers' retry horizons. Default 7 days. */
  dedupeHorizonMs?: number;
  /** HTTP limits for slow clients: all headers within `headersMs` (10 s), the whole request within `requestMs` (30 s). */
  httpTimeouts?: { headersMs?: number; requestMs?: number };
  /** Enables the admin API; default `LONGHAUL_ADMIN_KEY`. */
  adminKey?: string;
  /**
   * Capability token keys (the first signs; all verify) and the default lifetime of a
   * callback or approval link. Without keys, keys generated once and kept in the store.
   */
  tokens?: { keys?: TokenKey[]; ttl_s?: number };
  /**
   * Outbound webhooks: the retry schedule in seconds (default the Standard Webhooks one), and
   * whether loopback and private targets are allowed (`longhaul dev` allows them).
   */
  outbound?: OutboundConfig;
  /** SSE streams of `GET /v1/events`: the heartbeat interval. */
  realtime?: EventStreamsOptions;
  /**
   * Request rates per tenant and per address, caps on open SSE streams and webhook endpoints
   * per tenant, and how long signals are kept (see `LimitsConfig` for keys and defaults).
   */
  limits?: LimitsConfig;
  clock?: Clock;
  ids?: IdGenerator;
  logger?: Logger;
  /**
   * The dashboard at `GET /`. `devApiKey` (set by `longhaul dev` only) opens it signed in as
   * that tenant; without it the dashboard asks for a key.
   */
  dashboard?: { devApiKey?: string };
  /**
   * Keys (32 bytes, base64 or hex) that encrypt secrets at rest: outbound endpoint secrets and
   * generated token keys. The first encrypts, all decrypt. Default `LONGHAUL_SECRET_KEY`
   * followed by the keys of `LONGHAUL_SECRET_KEYS`; none: secrets are stored as given.
   */
  secretKeys?: string[];
  /**
   * `GET /metrics`: by default on the API address behind the admin key (off without one).
   * `listen` ("127.0.0.1:9464") also serves it, without a key, on an address of its own;
   * `public: true` opens it on the API address to anyone.
   */
  metrics?: { listen?: string; public?: boolean };
}

export interface Longhaul {
  store: Store;
  server: FastifyInstance;
  worker: Worker | null;
  log: Logger;
  /** Capability token keys of this deployment, and the URLs minted from them. */
  keyring: Keyring;
  urls: CapabilityUrls;
  /** Starts the worker alone (role `worker`, or a library that serves no HTTP). */
  start(): void;
  /** The URL of `GET /metrics` on its own address (`metrics.listen`), once listening; else null. */
  readonly metricsUrl: string | null;
  /** Starts the worker (unless role is `api`) and listens; returns the base URL. */
  listen(opts: { port: number; host?: string }): Promise<string>;
  close(): Promise<void>;
}

/** Wires store, registries, worker and HTTP server together: the one place adapters meet. */
export async function createLonghaul(opts: LonghaulOptions = {}): Promise<Longhaul> {
  // Bad settings fail before anything is opened.
  const limits = resolveLimits(opts.limits);
  const clock = opts.clock ?? systemClock;
  const ids = opts.ids ?? ulidGenerator(clock);
  const log = opts.logger ?? pino(safeLoggerOptions(process.env.LONGHAUL_LOG_LEVEL ?? "info"));
  const secrets = secretBoxFrom(opts.secretKeys);
  if (opts.metrics?.listen !== undefined) parseListen(opts.metrics.listen);
  const store =
    opts.store ??
    (await openStore(
      opts.databaseUrl ?? process.env.LONGHAUL_DATABASE_URL ?? "sqlite:.longhaul/longhaul.db",
      { clock, ids },
    ));
  await store.migrate();
  // Stored secrets follow the current encryption key: plain ones are sealed, ones under an
  // older key resealed. One this deployment cannot read stops the start, saying which key.
  await store.resealSecrets((stored) => secrets.reseal(stored), SEALED_META_KEYS);

  const taskTypes = taskTypeRegistry(opts.taskTypes);
  const providers = providerRegistry(opts.providers);
  const sources = new Map<string, Source>();
  for (const [name, cfg] of Object.entries(opts.sources ?? {})) sources.set(name, buildSource(name, cfg));

  let publicUrl = opts.publicUrl?.replace(/\/$/, "") ?? null;
  const webhookUrlFor = (provider: string) => {
    const source = [...sources.values()].find((s) => s.provider === provider);
    if (!source) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `No webhook source is configured for provider "${provider}".`,
      );
    }
    if (!publicUrl)
      throw new LonghaulError("CONFIG_INVALID", "Set public_url so providers know where to send webhooks.");
    return `${publicUrl}/hooks/${source.name}`;
  };

  const keyring = await keyringFromConfig(
    opts.tokens?.keys ? { keys: opts.tokens.keys } : undefined,
    async () => {
      const stored = await store.getMeta(TOKEN_KEYS_META_KEY);
      return stored === null ? null : secrets.open(stored);
    },
    async (json) => secrets.open(await store.putMetaIfAbsent(TOKEN_KEYS_META_KEY, secrets.seal(json))),
  );
  const defaultWaitMs = (opts.tokens?.ttl_s ?? 48 * 3600) * 1000;
  const baseUrl = () => {
    if (!publicUrl)
      throw new LonghaulError("CONFIG_INVALID", "Set public_url so links point at this deployment.");
    return publicUrl;
  };
  const urls = new CapabilityUrls(keyring, baseUrl, defaultWaitMs, clock);

  const outbound = outboundSettings(opts.outbound, secrets);
  const metrics = new Metrics();
  const role = opts.role ?? "all";
  const worker =
    role === "api"
      ? null
      : new Worker(
          {
            store,
            clock,
            metrics,
            taskTypes,
            providers,
            webhookUrlFor,
            log,
            urls,
            defaultWaitMs,
            defaultTimeoutMs: opts.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS,
            pollAfterMs: opts.pollAfterMs ?? 60_000,
            dedupeHorizonMs: opts.dedupeHorizonMs ?? 7 * 24 * 3_600_000,
            signalRetentionMs: limits.signal_retention_s * 1000,
            outbound,
          },
          opts.worker,
        );
  const server = buildServer({
    store,
    clock,
    metrics,
    taskTypes,
    sources,
    log,
    keyring,
    urls,
    adminKey: opts.adminKey ?? process.env.LONGHAUL_ADMIN_KEY,
    outbound,
    realtime: opts.realtime,
    limits,
    dashboard: opts.dashboard,
    timeouts: opts.httpTimeouts,
    metricsPublic: opts.metrics?.public === true,
  });
  let metricsServer: Awaited<ReturnType<typeof startMetricsServer>> | null = null;

  return {
    store,
    server,
    worker,
    log,
    keyring,
    urls,
    get metricsUrl() {
      return metricsServer?.url ?? null;
    },
    start() {
      worker?.start();
    },
    async listen({ port, host = "127.0.0.1" }) {
      const address = await server.listen({ port, host });
      if (opts.metrics?.listen && !metricsServer) {
        metricsServer = await startMetricsServer(metrics, opts.metrics.listen);
      }
      publicUrl ??= address;
      worker?.start();
      return address;
    },
    async close() {
      await server.close();
      await metricsServer?.close();
      await worker?.stop();
      await store.close();
    },
  };
}
