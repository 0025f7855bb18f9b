import { join } from "node:path";
import { createLonghaul, type Longhaul, type LonghaulOptions } from "../src/app.ts";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import type { Clock } from "../src/core/clock.ts";
import type { TaskType } from "../src/core/task-type.ts";
import { demoTaskTypes } from "../src/demo/index.ts";
import type { Provider } from "../src/providers/provider.ts";
import type { ChaosOptions } from "../src/providers/sim/chaos.ts";
import { simProvider } from "../src/providers/sim/sim-provider.ts";
import { type Simulator, startSimulator } from "../src/providers/sim/simulator.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/store.ts";
import { quietLog, tempDir } from "./helpers.ts";

export const SIM_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

export interface Stack {
  app: Longhaul;
  store: SqliteStore;
  sim: Simulator;
  url: string;
  key: string;
  tenantId: string;
  /** fetch against the API with the tenant's key. */
  api(
    path: string,
    init?: { method?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

/**
 * A whole deployment in this process over real loopback HTTP: a SQLite file, the worker,
 * the API and the simulator sending signed webhooks to it.
 */
export async function startStack(
  opts: {
    chaos?: ChaosOptions;
    taskTypes?: TaskType[];
    seed?: number;
    pollAfterMs?: number;
    defaultTimeoutMs?: number;
    adminKey?: string;
    providers?: Provider[];
    concurrency?: number;
    tokens?: LonghaulOptions["tokens"];
    outbound?: LonghaulOptions["outbound"];
    notify?: LonghaulOptions["notify"];
    notifiers?: LonghaulOptions["notifiers"];
    realtime?: LonghaulOptions["realtime"];
    /** Reuse this SQLite file (a restart) instead of a fresh one. */
    dbPath?: string;
    /** Serve the dashboard signed in as the stack's tenant, as `longhaul dev` does. */
    dashboard?: boolean;
    httpTimeouts?: LonghaulOptions["httpTimeouts"];
    limits?: LonghaulOptions["limits"];
    logger?: LonghaulOptions["logger"];
    /** Shared by the store and the app. */
    clock?: Clock;
    secretKeys?: string[];
    metrics?: LonghaulOptions["metrics"];
    /** More sources, or other configurations of the ones made for each provider. */
    sources?: LonghaulOptions["sources"];
    /** The simulator provider's enqueued-token budgets per model (provider admission). */
    simEnqueuedTokens?: Record<string, number>;
    /** The random source of the worker's retry jitter. */
    random?: () => number;
    /** Where files' bytes live; default a directory in the stack's temporary directory. */
    blobs?: LonghaulOptions["blobs"];
    storageUrls?: LonghaulOptions["storageUrls"];
    resolveUrlHost?: LonghaulOptions["resolveUrlHost"];
    /**
     * Another store (PostgreSQL) in place of the SQLite file, not yet migrated. `stack.store`
     * is still typed as SQLite: use only the `Store` interface on it.
     */
    store?: Store;
  } = {},
): Promise<Stack> {
  const tmp = tempDir();
  const storeOpts = {
    path: opts.dbPath ?? join(tmp.dir, "longhaul.db"),
    ...(opts.clock ? { clock: opts.clock } : {}),
  };
  const store = (opts.store ?? new SqliteStore(storeOpts)) as SqliteStore;
  await store.migrate();
  const sim = await startSimulator({
    secret: SIM_SECRET,
    seed: opts.seed ?? 1,
    retryScheduleMs: [50, 100, 200, 400, 800, 1600],
    ...(opts.chaos ? { chaos: opts.chaos } : {}),
    onError: () => {},
  });
  const key = newApiKey();
  const tenant = await store.createTenant({ name: "test", keyHash: hashApiKey(key) });
  const app = await createLonghaul({
    store,
    logger: opts.logger ?? quietLog(),
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.secretKeys ? { secretKeys: opts.secretKeys } : {}),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    taskTypes: [...demoTaskTypes(tmp.dir), ...(opts.taskTypes ?? [])],
    providers: [
      {
        ...simProvider({ baseUrl: sim.url }),
        ...(opts.simEnqueuedTokens ? { enqueuedTokens: opts.simEnqueuedTokens } : {}),
      },
      ...(opts.providers ?? []),
    ],
    ...(opts.random ? { random: opts.random } : {}),
    sources: {
      sim: { provider: "sim", secrets: [SIM_SECRET] },
      ...Object.fromEntries(
        (opts.providers ?? []).map((p) => [p.name, { provider: p.name, secrets: [SIM_SECRET] }]),
      ),
      ...opts.sources,
    },
    worker: { leaseMs: 5000, idleMs: 200, ...(opts.concurrency ? { concurrency: opts.concurrency } : {}) },
    pollAfterMs: opts.pollAfterMs ?? 60_000,
    ...(opts.defaultTimeoutMs ? { defaultTimeoutMs: opts.defaultTimeoutMs } : {}),
    ...(opts.adminKey ? { adminKey: opts.adminKey } : {}),
    ...(opts.tokens ? { tokens: opts.tokens } : {}),
    ...(opts.dashboard ? { dashboard: { devApiKey: key } } : {}),
    ...(opts.outbound ? { outbound: opts.outbound } : {}),
    ...(opts.notify ? { notify: opts.notify } : {}),
    ...(opts.notifiers ? { notifiers: opts.notifiers } : {}),
    ...(opts.realtime ? { realtime: opts.realtime } : {}),
    ...(opts.httpTimeouts ? { httpTimeouts: opts.httpTimeouts } : {}),
    ...(opts.limits ? { limits: opts.limits } : {}),
    ...(opts.storageUrls ? { storageUrls: opts.storageUrls } : {}),
    ...(opts.resolveUrlHost ? { resolveUrlHost: opts.resolveUrlHost } : {}),
    blobs: opts.blobs ?? new FsBlobStore({ root: join(tmp.dir, "blobs") }),
  });
  const url = await app.listen({ port: 0 });
  const api: Stack["api"] = async (path, init = {}) => {
    const res = await fetch(url + path, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: {
        authorization: `Bearer ${key}`,
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
        ...init.headers,
      },
      ...(init.body === undefined
        ? {}
        : { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
  return {
    app,
    store,
    sim,
    url,
    key,
    tenantId: tenant.id,
    api,
    async close() {
      await app.close();
      await sim.close();
      tmp.cleanup();
    },
  };
}
