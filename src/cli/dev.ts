import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { createLonghaul } from "../app.ts";
import { hashApiKey, newApiKey } from "../core/api-keys.ts";
import { metaValueAt } from "../core/sealed-at.ts";
import { demoTaskTypes } from "../demo/index.ts";
import { isLoopbackAddress } from "../http/loopback.ts";
import { providersFromConfig } from "../providers/from-config.ts";
import { simProvider } from "../providers/sim/sim-provider.ts";
import { startSimulator } from "../providers/sim/simulator.ts";
import { DEV_API_KEY_META_KEY, DEV_SIM_SECRET_META_KEY } from "../secrets/sealed-meta-keys.ts";
import { secretBoxFrom } from "../secrets/secret-box.ts";
import { openStore } from "../store/open-store.ts";
import { engineOptions, readConfig } from "./config.ts";
import { onShutdown } from "./shutdown.ts";

export const DEV_TENANT_ID = "tn_dev";

/** The URL `dev` mints links under when the config sets none: its own address, reachable from this machine. */
export function devPublicUrl(listenHost: string, port: number): string {
  const host = listenHost === "0.0.0.0" ? "127.0.0.1" : listenHost === "::" ? "::1" : listenHost;
  // An IPv6 address is bracketed in a URL.
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * `longhaul dev`: server, workers and simulator in one process. The development tenant and
 * the simulator's signing secret are created once and kept in the store, so a restart on the
 * same data directory prints the same key and resumes every task.
 */
export async function dev(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: "string", default: process.env.LONGHAUL_PORT || process.env.PORT || "8787" },
      host: { type: "string", default: process.env.LONGHAUL_HOST || "127.0.0.1" },
      "data-dir": { type: "string", default: ".longhaul" },
      config: { type: "string" },
      "sim-port": { type: "string", default: "0" },
    },
  });
  const port = Number(values.port);
  const dataDir = values["data-dir"];
  // The simulator's state and the demo's chunks live here, whichever store holds the tasks.
  mkdirSync(dataDir, { recursive: true });
  const config = await readConfig(values.config);
  const log = pino({ level: process.env.LONGHAUL_LOG_LEVEL ?? "warn" });
  const store = await openStore(
    process.env.LONGHAUL_DATABASE_URL ?? `sqlite:${join(dataDir, "longhaul.db")}`,
  );
  await store.migrate();
  const secrets = secretBoxFrom(undefined);
  if (!secrets.enabled) {
    console.warn(
      "longhaul dev: LONGHAUL_SECRET_KEY is not set, so generated secrets are stored in plain text (`longhaul serve` refuses this).",
    );
  }
  if (!isLoopbackAddress(values.host) && values.host !== "localhost") {
    console.error(`
  WARNING: longhaul dev is listening on ${values.host}, reachable from other machines.
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
    port: Number(values["sim-port"]),
    secret: simSecret,
    stateFile: join(dataDir, "sim.db"),
  });
  const apiKey = process.env.LONGHAUL_API_KEY ?? (await keep(DEV_API_KEY_META_KEY, newApiKey()));
  await store.ensureTenant({ id: DEV_TENANT_ID, name: "development", keyHash: hashApiKey(apiKey) });

  const publicUrl = config.public_url ?? devPublicUrl(values.host, port);
  const app = await createLonghaul({
    store,
    logger: log,
    taskTypes: [...demoTaskTypes(dataDir), ...(config.taskTypes ?? [])],
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
    // ARCHITECTURE §7: development allows loopback and private webhook targets (link-local stays refused).
    outbound: { allow_private_networks: true, ...config.outbound },
    // ARCHITECTURE §7: under dev the dashboard opens signed in as the development tenant, for a
    // browser on this machine only (see dashboard-routes.ts).
    dashboard: { devApiKey: apiKey },
  });
  const url = await app.listen({ port, host: values.host });
  onShutdown(async () => {
    await app.close();
    await sim.close();
  });

  console.log(`
longhaul dev is running

  API        ${url}
  dashboard  ${url}/
  API key    ${apiKey}
  simulator  ${sim.url}
  data       ${dataDir}

Try it:
  curl -s -X POST ${url}/v1/tasks \\
    -H "Authorization: Bearer ${apiKey}" -H "Content-Type: application/json" \\
    -d '{"type": "demo.echo", "input": {"text": "hello", "delay_ms": 500}}'
`);
}
