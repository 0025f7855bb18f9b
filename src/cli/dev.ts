import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { createLonghaul } from "../app.ts";
import type { LonghaulConfig } from "../config/define-config.ts";
import { hashApiKey, newApiKey } from "../core/api-keys.ts";
import { metaValueAt } from "../core/sealed-at.ts";
import type { TaskType } from "../core/task-type.ts";
import { demoTaskTypes } from "../demo/index.ts";
import { safeLoggerOptions } from "../http/log-redaction.ts";
import { isLoopbackAddress } from "../http/loopback.ts";
import { providersFromConfig } from "../providers/from-config.ts";
import { simProvider } from "../providers/sim/sim-provider.ts";
import { startSimulator } from "../providers/sim/simulator.ts";
import { DEV_API_KEY_META_KEY, DEV_SIM_SECRET_META_KEY } from "../secrets/sealed-meta-keys.ts";
import { secretBoxFrom } from "../secrets/secret-box.ts";
import { openStore } from "../store/open-store.ts";
import { engineOptions, readConfig } from "./config.ts";
import { DevCompanion, wantsColor } from "./dev-companion.ts";
import { prettyLogStream } from "./dev-log.ts";
import { DEV_GENERATION_VARIABLE, type DevOptions, type DevReady } from "./dev-options.ts";
import { listenPort } from "./listen-port.ts";
import { onShutdown } from "./shutdown.ts";

export const DEV_TENANT_ID = "tn_dev";

/** The URL `dev` mints links under when the config sets none: its own address, reachable from this machine. */
export function devPublicUrl(listenHost: string, port: number): string {
  const host = listenHost === "0.0.0.0" ? "127.0.0.1" : listenHost === "::" ? "::1" : listenHost;
  // An IPv6 address is bracketed in a URL.
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** `longhaul dev`: the server, or under `--watch` the supervisor that restarts it on a change. */
export async function devCommand(o: DevOptions): Promise<void> {
  if (o.checkConfig) {
    // What a `--watch` supervisor runs before a restart: the config loads, with every file it imports.
    const config = await readConfig(o.config);
    console.log(JSON.stringify({ taskTypes: taskTypesOf(o.dataDir, config).map((t) => t.name) }));
    return;
  }
  if (o.watch && !process.env[DEV_GENERATION_VARIABLE]) {
    const { watchDev } = await import("./dev-watch.ts");
    return watchDev(o);
  }
  return dev(o);
}

/** The task types `dev` registers: the demo's, then the config's. */
function taskTypesOf(dataDir: string, config: LonghaulConfig): TaskType[] {
  return [...demoTaskTypes(dataDir), ...(config.taskTypes ?? [])];
}

/**
 * `longhaul dev`: server, workers and simulator in one process. The development tenant and
 * the simulator's signing secret are created once and kept in the store, so a restart on the
 * same data directory prints the same key and resumes every task.
 */
export async function dev(o: DevOptions): Promise<void> {
  const port = listenPort(o);
  const dataDir = o.dataDir;
  const generation = Number(process.env[DEV_GENERATION_VARIABLE] ?? 0);
  // The simulator's state and the demo's chunks live here, whichever store holds the tasks.
  mkdirSync(dataDir, { recursive: true });
  const config = await readConfig(o.config);
  const log = pino(safeLoggerOptions(o.logLevel), prettyLogStream(process.stderr));
  const store = await openStore(o.databaseUrl ?? `sqlite:${join(dataDir, "longhaul.db")}`);
  await store.migrate();
  const secrets = secretBoxFrom(undefined);
  if (!secrets.enabled && generation <= 1) {
    console.warn(
      "longhaul dev: LONGHAUL_SECRET_KEY is not set, so generated secrets are stored in plain text (`longhaul serve` refuses this).",
    );
  }
  if (!isLoopbackAddress(o.host) && o.host !== "localhost" && generation <= 1) {
    console.error(`
  WARNING: longhaul dev is listening on ${o.host}, reachable from other machines.
  Anyone who reaches it can use the API with the development key printed below if they
  learn it; the dashboard hands the key only to a browser on this machine. Use
  --host 127.0.0.1 unless you need otherwise, and \`longhaul serve\` for anything shared.
`);
  }

  // Kept sealed when an encryption key is set, like every other secret in the store.
  const keep = async (key: string, value: string) =>
    secrets.open(await store.putMetaIfAbsent(key, secrets.seal(value, metaValueAt(key))), metaValueAt(key));
  const simSecret = await keep(DEV_SIM_SECRET_META_KEY, `whsec_${randomBytes(24).toString("base64")}`);
  const sim = await startSimulator({
    port: o.simPort,
    secret: simSecret,
    stateFile: join(dataDir, "sim.db"),
  });
  const apiKey = process.env.LONGHAUL_API_KEY || (await keep(DEV_API_KEY_META_KEY, newApiKey()));
  await store.ensureTenant({ id: DEV_TENANT_ID, name: "development", keyHash: hashApiKey(apiKey) });

  const publicUrl = config.public_url ?? devPublicUrl(o.host, port);
  const taskTypes = taskTypesOf(dataDir, config);
  const app = await createLonghaul({
    store,
    // Uploaded files' bytes, beside the database in the data directory.
    blobDir: join(dataDir, "blobs"),
    logger: log,
    taskTypes,
    providers: [simProvider({ baseUrl: sim.url }), ...providersFromConfig(config.providers ?? {})],
    sources: {
      sim: { provider: "sim", scheme: "standard-webhooks", secrets: [simSecret] },
      ...config.sources,
    },
    publicUrl,
    pollAfterMs: 30_000,
    ...engineOptions(config),
    ...(config.tokens ? { tokens: config.tokens } : {}),
    ...(config.metrics ? { metrics: config.metrics } : {}),
    ...(config.notify ? { notify: config.notify } : {}),
    ...(config.notifiers ? { notifiers: config.notifiers } : {}),
    // ARCHITECTURE §7: development allows loopback and private webhook targets (link-local stays refused).
    outbound: { allow_private_networks: true, ...config.outbound },
    // ARCHITECTURE §7: under dev the dashboard opens signed in as the development tenant, for a
    // browser on this machine only (see dashboard-routes.ts).
    dashboard: { devApiKey: apiKey },
  });
  // The dashboard's page of a task (web/src/router.ts: every view lives after `#`), at the
  // address the server listens on once it does.
  let dashboard = devPublicUrl(o.host, port);
  const companion = new DevCompanion(
    store,
    {
      color: wantsColor(process.stdout),
      link: (taskId) => `${dashboard}/#/tasks/${encodeURIComponent(taskId)}`,
      watching: generation > 0,
    },
    (line) => process.stdout.write(`${line}\n`),
    (err) => log.warn({ err }, "the task event log could not be read; lines may be missing"),
  );
  await companion.start([DEV_TENANT_ID]);
  const url = await app.listen({ port, host: o.host });
  // Fastify's address names the host it bound (0.0.0.0 for every interface): a link names one
  // a browser on this machine reaches.
  dashboard = devPublicUrl(o.host, Number(new URL(url).port) || port);
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      companion.close();
      await app.close();
      await sim.close();
    })());
  onShutdown(close);
  // Under `--watch`: the supervisor hears that this server listens, and this server stops when
  // the supervisor goes, however it went.
  if (process.send) {
    process.once("disconnect", () => void close().then(() => process.exit(0)));
    process.send({ type: "ready", url, taskTypes: taskTypes.map((t) => t.name) } satisfies DevReady);
  }
  if (generation > 1) return;

  console.log(`
longhaul dev is running

  API        ${url}
  dashboard  ${url}/
  API key    ${apiKey}
  simulator  ${sim.url}
  data       ${dataDir}
  task types ${taskTypes.map((t) => t.name).join(", ")}

Try it:
  curl -s -X POST ${url}/v1/tasks \\
    -H "Authorization: Bearer ${apiKey}" -H "Content-Type: application/json" \\
    -d '{"type": "demo.echo", "input": {"text": "hello", "delay_ms": 500}}'
`);
}
