import { dirname, join } from "node:path";
import type { FastifyInstance } from "fastify";
import { type Logger, pino } from "pino";
import type { BlobStore } from "./blobs/blob-store.ts";
import { FsBlobStore } from "./blobs/fs-blob-store.ts";
import { type Clock, systemClock } from "./core/clock.ts";
import { LonghaulError } from "./core/errors.ts";
import { fileSizeCap } from "./core/file.ts";
import type { IdGenerator } from "./core/ids.ts";
import { type LimitsConfig, resolveLimits } from "./core/limits.ts";
import type { NotifyTarget } from "./core/notification.ts";
import { DEFAULT_TIMEOUT_MS } from "./core/replay.ts";
import { metaValueAt } from "./core/sealed-at.ts";
import { OptionSettings } from "./core/settings.ts";
import { checkSettings } from "./core/settings-check.ts";
import type { StorageUrlsConfig } from "./core/storage-urls.ts";
import type { TaskInfo, TaskType } from "./core/task-type.ts";
import { workKinds } from "./core/work-item.ts";
import { type EmbeddedCalls, embeddedCalls } from "./embedded.ts";
import { providerRegistry, taskTypeRegistry } from "./engine/registry.ts";
import type { Worker, WorkerOptions } from "./engine/worker.ts";
import type { EventStreamsOptions } from "./http/event-streams.ts";
import { type ClientAddress, type FetchOptions, fetchHandler } from "./http/fetch.ts";
import { type HttpPressure, httpPressure, type PressureSignals } from "./http/http-pressure.ts";
import { safeLoggerOptions } from "./http/log-redaction.ts";
import { parseListen, startMetricsServer } from "./http/metrics-server.ts";
import { buildServer, payloadSettings } from "./http/server.ts";
import { buildSource, checkSources, type Source, type SourceConfig } from "./ingress/sources.ts";
import { Metrics } from "./metrics/metrics.ts";
import { type NotifyConfig, notifyContext, notifySettings } from "./notify/settings.ts";
import { urlReader } from "./outbound/read-url.ts";
import { type OutboundConfig, outboundSettings } from "./outbound/settings.ts";
import type { Resolve } from "./outbound/ssrf.ts";
import type { Provider } from "./providers/provider.ts";
import type { Embedder } from "./search/embedder.ts";
import { hashedNgramEmbedder } from "./search/hashed-ngram-embedder.ts";
import { SEALED_META_KEYS } from "./secrets/sealed-meta-keys.ts";
import { secretBoxFrom } from "./secrets/secret-box.ts";
import { SinkPool } from "./sinks/sink-pool.ts";
import { openStore, sqlitePathOf } from "./store/open-store.ts";
import type { Store } from "./store/store.ts";
import { CapabilityUrls } from "./tokens/capability-urls.ts";
import { type Keyring, keyringFromConfig, TOKEN_KEYS_META_KEY, type TokenKey } from "./tokens/keyring.ts";
import { taskIndex } from "./usecases/index-task-chunks.ts";
import { taskFiles } from "./usecases/task-files.ts";

export interface LonghaulOptions {
  /** `sqlite:path` or `postgres://…`; ignored when `store` is given. Default `sqlite:.longhaul/longhaul.db`. */
  databaseUrl?: string;
  store?: Store;
  /**
   * Where uploaded files' bytes live (`src/blobs`): a directory (`FsBlobStore`) or an
   * S3-compatible bucket (`openS3BlobStore`). Default a directory: `blobDir`, else `blobs`
   * beside a SQLite database file, else `.longhaul/blobs`.
   */
  blobs?: BlobStore;
  blobDir?: string;
  /**
   * How tasks' chunks and search queries become vectors (README "Search"). Default the local
   * `hashed-ngram` embedder, 384 dimensions: no model, no network.
   */
  embedder?: Embedder;
  taskTypes?: TaskType[];
  /** The same as `taskTypes` (both may be given; a name registered twice is CONFIG_INVALID). */
  tasks?: TaskType[];
  /**
   * The tenant that `submit`, `signal` and `cancel` act for when a call names none. Created
   * (with no usable API key) if it does not exist. Without it: the store's only tenant; with
   * none yet, `tn_default` is created; with several, a call must name its tenant.
   */
  tenant?: string;
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
  /**
   * Enables the admin API; default `LONGHAUL_ADMIN_KEY`. At least 32 characters
   * (`openssl rand -base64 32`); empty: the admin API is off.
   */
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
  /**
   * How approvals' messages leave: `smtp` (email), `slack` (bot token, signing secrets for
   * button clicks, Slack users mapped to approvers), `webhook_secret` (signs webhook channels).
   */
  notify?: NotifyConfig;
  /** Channels by name, for an approval's `notify` to refer to, so secrets stay out of task input. */
  notifiers?: Record<string, NotifyTarget>;
  /** SSE streams of `GET /v1/events`: the heartbeat interval. */
  realtime?: EventStreamsOptions;
  /**
   * Request rates per tenant and per address, caps on open SSE streams and webhook endpoints
   * per tenant, and how long signals are kept (see `LimitsConfig` for keys and defaults).
   */
  limits?: LimitsConfig;
  /**
   * How task code reads `{"url": …}` references (config `storage_urls`): credentials for
   * `s3://` and `gs://`, and how long a read may go without a byte. `https://` needs none.
   */
  storageUrls?: StorageUrlsConfig;
  /** The resolver of the hosts `{"url": …}` reads connect to; injected by tests. */
  resolveUrlHost?: Resolve;
  clock?: Clock;
  /** The random source of retry jitter (default `Math.random`); injected so tests are exact. */
  random?: () => number;
  ids?: IdGenerator;
  /** Default: pino at `LONGHAUL_LOG_LEVEL`, else `warn`, so a host app's stdout stays quiet. */
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
  /**
   * `lh.fetch`: where the client's address of a request is found when the call gives no
   * `remoteAddress` (Cloudflare: `(r) => r.headers.get("cf-connecting-ip")`). Unknown, a
   * request is counted against no address (README "Serverless and edge").
   */
  clientAddress?: ClientAddress;
  /**
   * What a worker beside the API (role `all`) reads to yield to HTTP: the event loop's busy
   * share and the windows it is read in. Default: this process's own (ARCHITECTURE §4.2).
   */
  pressureSignals?: PressureSignals;
}

export {
  type CancelAnswer,
  DEFAULT_TENANT_ID,
  type RerunAnswer,
  type RerunRequest,
  type SignalAnswer,
  type SignalRequest,
  type SubmitAnswer,
  type SubmitBatchAnswer,
  type SubmitBatchRequest,
  type SubmitRequest,
  type TaskAnswer,
} from "./embedded.ts";

/** A longhaul in this process: its parts, the embedded calls (`EmbeddedCalls`), and its lifecycle. */
export interface Longhaul extends EmbeddedCalls {
  store: Store;
  /** Where uploaded files' bytes live; `blobs.sweep(ms)` removes what crashed uploads left. */
  blobs: BlobStore;
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
  /**
   * Handles due work until none is left or `maxMs` (default 10 s) has passed, for a process
   * woken by a cron or a queue instead of running the worker loop; `start()` is not needed.
   * `remaining`: due work is left, so drain again. CONFIG_INVALID under role `api`.
   */
  drain(opts?: { maxMs?: number }): Promise<{ processed: number; remaining: boolean }>;
  /**
   * Answers a Web-standard `Request` with the HTTP server's routes, without listening (a
   * serverless function's handler): the same auth, checks, errors and exact-bytes signature
   * checks as over a socket. See src/http/fetch.ts; `toLambdaHandler` adapts it to AWS Lambda.
   */
  fetch(request: Request, opts?: FetchOptions): Promise<Response>;
  /** Starts the worker (unless role is `api`) and listens; returns the base URL. */
  listen(opts: { port: number; host?: string }): Promise<string>;
  close(): Promise<void>;
}

/** Wires store, registries, worker and HTTP server together: the one place adapters meet. */
export async function createLonghaul(opts: LonghaulOptions = {}): Promise<Longhaul> {
  // Bad settings fail before anything is opened. An empty admin key is none: the admin API is off.
  const adminKey = (opts.adminKey ?? process.env.LONGHAUL_ADMIN_KEY) || undefined;
  checkSettings(
    OptionSettings,
    { ...opts, adminKey },
    {
      name: "the options",
      origin: (key) => (key === "adminKey" && opts.adminKey === undefined ? "LONGHAUL_ADMIN_KEY" : undefined),
    },
  );
  const limits = resolveLimits(opts.limits);
  const clock = opts.clock ?? systemClock;
  // Embedded in a host app, longhaul keeps its stdout quiet: warnings and errors only, unless
  // LONGHAUL_LOG_LEVEL or a logger says otherwise. `longhaul serve` logs at info.
  const log = opts.logger ?? pino(safeLoggerOptions(process.env.LONGHAUL_LOG_LEVEL ?? "warn"));
  const secrets = secretBoxFrom(opts.secretKeys);
  if (opts.metrics?.listen !== undefined) parseListen(opts.metrics.listen);
  const role = opts.role ?? "all";
  const store =
    opts.store ??
    (await openStore(
      opts.databaseUrl ?? process.env.LONGHAUL_DATABASE_URL ?? "sqlite:.longhaul/longhaul.db",
      // The store makes its own ids unless the caller brought a generator. Only a worker
      // node, whose loop answers nothing but its probe, may sync SQLite's WAL on the loop.
      { clock, ...(opts.ids ? { ids: opts.ids } : {}), syncInPlace: role === "worker" },
    ));
  await store.migrate();
  const blobs = opts.blobs ?? new FsBlobStore({ root: opts.blobDir ?? defaultBlobDir(opts), clock });
  // Plain secrets are sealed and old-format ones bound to their place, each under the key it
  // is under: a start never moves a value to another key, which nodes still starting may not
  // know yet (`longhaul secrets reseal` does, once every node writes with it). A value under
  // a key this node does not list stops the start, saying which key.
  await store.resealSecrets((stored, at) => secrets.upgrade(stored, at), SEALED_META_KEYS);

  const taskTypes = taskTypeRegistry([...(opts.taskTypes ?? []), ...(opts.tasks ?? [])]);
  const providers = providerRegistry(opts.providers);
  const sources = new Map<string, Source>();
  for (const [name, cfg] of Object.entries(opts.sources ?? {})) sources.set(name, buildSource(name, cfg));
  const dedupeHorizonMs = opts.dedupeHorizonMs ?? 7 * 24 * 3_600_000;
  const confirmSources = checkSources(
    sources,
    (name) => {
      const provider = providers.find(name);
      return provider && provider.status !== undefined;
    },
    dedupeHorizonMs,
  );

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

  const tokenKeysAt = metaValueAt(TOKEN_KEYS_META_KEY);
  const keyring = await keyringFromConfig(
    opts.tokens?.keys ? { keys: opts.tokens.keys } : undefined,
    async () => {
      const stored = await store.getMeta(TOKEN_KEYS_META_KEY);
      return stored === null ? null : secrets.open(stored, tokenKeysAt);
    },
    async (json) =>
      secrets.open(
        await store.putMetaIfAbsent(TOKEN_KEYS_META_KEY, secrets.seal(json, tokenKeysAt)),
        tokenKeysAt,
      ),
  );
  const defaultWaitMs = (opts.tokens?.ttl_s ?? 48 * 3600) * 1000;
  const baseUrl = () => {
    if (!publicUrl)
      throw new LonghaulError("CONFIG_INVALID", "Set public_url so links point at this deployment.");
    return publicUrl;
  };
  const urls = new CapabilityUrls(keyring, baseUrl, defaultWaitMs, clock);

  const outbound = outboundSettings(opts.outbound, secrets);
  const embedder = opts.embedder ?? hashedNgramEmbedder();
  // Broker connections of event sinks, shared by this process's deliveries, closed with it.
  const sinks = new SinkPool();
  const fileUrls = urlReader({
    policy: { allowPrivateNetworks: outbound.allowPrivateNetworks },
    maxBytes: fileSizeCap(limits.file_max_bytes),
    storage: opts.storageUrls,
    resolve: opts.resolveUrlHost,
  });
  const notify = notifySettings(opts.notify, opts.notifiers);
  const metrics = new Metrics({
    kinds: workKinds,
    read: () => store.queueStats(clock.now()),
    now: () => clock.now(),
  });
  // A worker beside the API claims a few items at a time while HTTP presses the loop (role all).
  let pressure: HttpPressure | null = null;
  // The engine is loaded only by the roles that run it.
  const worker =
    role === "api"
      ? null
      : new (await import("./engine/worker.ts")).Worker(
          {
            store,
            clock,
            metrics,
            taskTypes,
            providers,
            webhookUrlFor,
            log,
            urls,
            blobs,
            artifactLimits: {
              maxBytes: fileSizeCap(limits.file_max_bytes),
              storageQuotaBytes: limits.storage_quota_bytes,
            },
            inlineMaxBytes: limits.inline_max_bytes,
            defaultWaitMs,
            defaultTimeoutMs: opts.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS,
            pollAfterMs: opts.pollAfterMs ?? 60_000,
            dedupeHorizonMs,
            confirmSources,
            signalRetentionMs: limits.signal_retention_s * 1000,
            outbound,
            sinks,
            notify,
            ...(opts.random ? { random: opts.random } : {}),
            taskFiles: (tenantId: string) => taskFiles({ files: store, blobs, urls: fileUrls }, tenantId),
            taskIndex: (task: TaskInfo) => taskIndex({ chunks: store, embedder }, task),
            httpPressed: () => pressure?.pressed() ?? false,
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
    adminKey,
    outbound,
    notify,
    realtime: opts.realtime,
    limits,
    blobs,
    dashboard: opts.dashboard,
    timeouts: opts.httpTimeouts,
    metricsPublic: opts.metrics?.public === true,
    // A worker node answers its health probe and metrics, not the API (README "Commands").
    routes: role === "worker" ? "health" : "all",
    embedder,
  });
  if (role === "all") pressure = httpPressure(server.server, opts.pressureSignals);
  let metricsServer: Awaited<ReturnType<typeof startMetricsServer>> | null = null;

  // Embedded calls: the actions the HTTP routes call, for the tenant the caller names or the
  // default one (ARCHITECTURE §2).
  const calls = embeddedCalls({
    store,
    taskTypes,
    urls,
    metrics,
    schemaTimeoutMs: limits.schema_timeout_s * 1000,
    files: store,
    urlPolicy: { allowPrivateNetworks: outbound.allowPrivateNetworks },
    payloads: payloadSettings(blobs, limits),
    notify: notifyContext(notify),
    tenant: opts.tenant,
  });
  const fetch = fetchHandler(server, { clientAddress: opts.clientAddress, log });

  return {
    store,
    blobs,
    server,
    worker,
    fetch,
    log,
    keyring,
    urls,
    get metricsUrl() {
      return metricsServer?.url ?? null;
    },
    start() {
      worker?.start();
    },
    submit: calls.submit,
    submitBatch: calls.submitBatch,
    signal: calls.signal,
    get: calls.get,
    cancel: calls.cancel,
    rerun: calls.rerun,
    async drain(drainOpts = {}) {
      if (!worker) throw new LonghaulError("CONFIG_INVALID", "drain() needs a worker; role api has none.");
      return worker.drain(drainOpts);
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
      pressure?.close();
      await server.close();
      await metricsServer?.close();
      await worker?.stop();
      await sinks.close();
      await store.close();
    },
  };
}

/** `blobs` beside the SQLite file the options name, else `.longhaul/blobs` (the data directory). */
function defaultBlobDir(opts: LonghaulOptions): string {
  const url = opts.store
    ? null
    : (opts.databaseUrl ?? process.env.LONGHAUL_DATABASE_URL ?? "sqlite:.longhaul/longhaul.db");
  const file = url === null ? null : sqlitePathOf(url);
  return file === null || file === ":memory:" ? join(".longhaul", "blobs") : join(dirname(file), "blobs");
}
