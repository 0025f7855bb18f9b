import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { Metrics } from "../src/metrics/metrics.ts";
import { freePort, tempDir, waitFor } from "./helpers.ts";
import { CLI_FROM_SOURCE, exited, TEST_SECRET_KEY } from "./processes.ts";

// `longhaul serve` answers its first /healthz before it loads what only some requests, commands
// or roles use. The served process reports every module it loaded: ES modules through a load
// hook, CommonJS ones from require's cache when it exits.

const tmp = tempDir("longhaul-startup-");
after(() => tmp.cleanup());

const hooks = join(tmp.dir, "hooks.mjs");
const register = join(tmp.dir, "register.mjs");
const dump = join(tmp.dir, "dump.cjs");
before(() => {
  writeFileSync(
    hooks,
    `export async function load(url, context, next) {
  process.stderr.write("LOADED " + url + "\\n");
  return next(url, context);
}\n`,
  );
  writeFileSync(
    register,
    `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
  writeFileSync(
    dump,
    `process.on("exit", () => {
  for (const file of Object.keys(require.cache)) process.stderr.write("LOADED " + file + "\\n");
});\n`,
  );
  writeFileSync(join(tmp.dir, "longhaul.config.json"), "{}\n");
});

/** Starts `serve --role <role>`, runs `then` once /healthz answers 200, stops it: the modules it loaded. */
async function served(
  role: string,
  then: (url: string) => Promise<void> = async () => {},
): Promise<string[]> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    process.execPath,
    [
      "--require",
      dump,
      "--import",
      pathToFileURL(register).href,
      ...CLI_FROM_SOURCE,
      ...["serve", "--role", role, "--config", join(tmp.dir, "longhaul.config.json")],
      ...["--port", String(port), "--host", "127.0.0.1"],
    ],
    {
      env: {
        ...process.env,
        LONGHAUL_DATABASE_URL: `sqlite:${join(tmp.dir, `${role}-${port}.db`)}`,
        LONGHAUL_SECRET_KEY: TEST_SECRET_KEY,
        LONGHAUL_LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let err = "";
  child.stderr!.on("data", (b: Buffer) => {
    err += b.toString();
  });
  try {
    await waitFor(
      async () => (await fetch(`${url}/healthz`).catch(() => null))?.status === 200,
      30_000,
      `serve --role ${role} answering /healthz`,
    );
    await then(url);
  } finally {
    child.kill("SIGTERM");
    await exited(child);
  }
  return err
    .split("\n")
    .filter((l) => l.startsWith("LOADED "))
    .map((l) => l.slice("LOADED ".length).replaceAll("\\", "/"));
}

const loaded = (modules: string[], part: string) => modules.some((m) => m.includes(part));

/** What a start loads only when a request, a command or another role needs it. */
const LATER = [
  "/node_modules/typebox/build/compile/", // the validators' compiler: the first request to check
  "/node_modules/typebox/build/value/",
  "/node_modules/@fastify/ajv-compiler/", // Fastify's default validators: never
  "/node_modules/ajv/",
  // Response serializers: the first response with a schema (Fastify's own error serializer
  // uses fast-json-stringify/lib/serializer.js alone).
  "/node_modules/fast-json-stringify/index.js",
  "/node_modules/@fastify/swagger/", // /openapi.json: its first request
  "/node_modules/yaml/",
  "/node_modules/prom-client/", // metrics: the first count or scrape
  "/src/demo/", // `longhaul dev`
  "/src/providers/sim/simulator.ts", // `longhaul dev` and `longhaul simulate`
  "/src/cli/tenants.ts",
];

for (const role of ["api", "all"]) {
  test(`serve --role ${role} answers /healthz without loading what only later requests or other commands use`, async () => {
    const modules = await served(role);
    // The report works: what a start does need is in it, ES modules and CommonJS alike.
    assert.ok(loaded(modules, "/src/http/server.ts"), "src/http/server.ts is reported");
    assert.ok(loaded(modules, "/node_modules/fastify/fastify.js"), "fastify is reported");
    // Under role all the worker may count a first work item, which loads prom-client a second later.
    // Role api runs no worker, and loads no engine.
    const later =
      role === "all" ? LATER.filter((p) => !p.includes("prom-client")) : [...LATER, "/src/engine/worker.ts"];
    assert.deepEqual(
      later.filter((part) => loaded(modules, part)),
      [],
    );
  });
}

test("what is loaded later is loaded by the request that needs it, and works", async () => {
  const modules = await served("api", async (url) => {
    const doc = await fetch(`${url}/openapi.json`);
    assert.equal(doc.status, 200);
    assert.equal(((await doc.json()) as { openapi: string }).openapi, "3.1.0");
  });
  assert.ok(loaded(modules, "/node_modules/@fastify/swagger/"), "@fastify/swagger loaded by /openapi.json");
});

test("counts made before prom-client is loaded are in the first scrape", async () => {
  const m = new Metrics();
  m.tasksSubmitted.inc({ type: "t" });
  m.tasksSubmitted.inc({ type: "t" });
  m.webhooks.inc({ source: "s", result: "accepted" });
  const stop = m.workSeconds.startTimer({ kind: "advance" });
  assert.ok(stop() >= 0);
  m.workItems.inc({ kind: "advance", outcome: "done" });
  const text = await m.registry.metrics();
  assert.match(text, /longhaul_tasks_submitted_total\{type="t"\} 2/);
  assert.match(text, /longhaul_webhooks_received_total\{source="s",result="accepted"\} 1/);
  assert.match(text, /longhaul_work_items_total\{kind="advance",outcome="done"\} 1/);
  assert.match(text, /longhaul_work_item_duration_seconds_count\{kind="advance"\} 1/);
  assert.match(text, /longhaul_process_cpu_seconds_total/);
  assert.match(m.registry.contentType, /^text\/plain; version=0\.0\.4/);
  // Counted once loaded: at once.
  m.tasksSubmitted.inc({ type: "t" });
  assert.match(await m.registry.metrics(), /longhaul_tasks_submitted_total\{type="t"\} 3/);
});

test("an embedded call right after start waits for the validators' compiler, then is checked", async () => {
  const { createLonghaul } = await import("../src/app.ts");
  const { quietLog } = await import("./helpers.ts");
  const app = await createLonghaul({
    databaseUrl: `sqlite:${join(tmp.dir, "embedded.db")}`,
    logger: quietLog(),
    role: "api",
  });
  try {
    // The embedded call goes through the same lazily loaded check.
    await assert.rejects(app.submit({} as never), (err: Error & { code?: string }) => {
      assert.equal(err.code, "VALIDATION_FAILED");
      assert.match(err.message, /"type" in the body is required/);
      return true;
    });
  } finally {
    await app.close();
  }
});
