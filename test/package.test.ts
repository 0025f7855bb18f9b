import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { test } from "node:test";
import { freePort, tempDir, waitFor } from "./helpers.ts";
import {
  devKeyOf,
  jsonApi,
  node,
  packageVersion,
  packTarball,
  ROOT,
  type Running,
  scratchApp,
  startNode,
  tarballKb,
} from "./tarball.ts";

// The package as people install it: `npm pack` (which builds dist/ and web/dist through
// `prepare`), `npm install <tarball>` into a fresh ESM app, then plain `node`, without tsx:
// every entry point imports, `longhaul/client` loads no server dependency, and the installed
// `longhaul dev` runs a task from the app's own config to `succeeded` and serves the dashboard.
// Packing and installing live in tarball.ts.

const SERVER_DEPENDENCIES = ["fastify", "pg", "better-sqlite3", "pino"];

/** An app that installs longhaul with --omit=optional and uses only the client. */
const CLIENT_APP_FILES: Record<string, string> = {
  "package.json": JSON.stringify({ name: "client-app", private: true, type: "module" }),
  "client.mjs": `import { LonghaulClient } from "longhaul/client";
const [baseUrl, apiKey] = process.argv.slice(2);
const lh = new LonghaulClient({ baseUrl, apiKey });
const { task_id } = await lh.submit("app.hello", { name: "client" });
for (;;) {
  const task = await lh.get(task_id);
  if (["succeeded", "failed", "canceled", "timed_out"].includes(task.status)) {
    console.log(JSON.stringify({ status: task.status, output: task.output }));
    break;
  }
  await new Promise((r) => setTimeout(r, 50));
}
`,
  "server.mjs": `import { createLonghaul } from "longhaul/server";
for (const databaseUrl of ["sqlite:./x.db", "postgres://postgres@127.0.0.1:1/none"]) {
  try {
    await createLonghaul({ databaseUrl });
    console.log("opened");
  } catch (err) {
    console.log(err.code + " " + err.message);
  }
}
`,
};

/** The scratch app: an ESM package with a longhaul config and a few probe scripts. */
const APP_FILES: Record<string, string> = {
  "package.json": JSON.stringify({ name: "app", private: true, type: "module" }),
  "tsconfig.json": JSON.stringify({
    compilerOptions: {
      strict: true,
      skipLibCheck: false,
      module: "nodenext",
      moduleResolution: "nodenext",
      target: "es2022",
      noEmit: true,
    },
    files: ["consumer.ts"],
  }),
  "consumer.ts": `import { defineConfig, task } from "longhaul";
import { LonghaulClient } from "longhaul/client";
import { createLonghaul } from "longhaul/server";
import { openTestStore } from "longhaul/testing";

export const t = task({ id: "typed", run: async (input: { n: number }) => input.n * 2 });
export const config = defineConfig({ tasks: [t] });
export const client = new LonghaulClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k" });
export const make = () => createLonghaul({ databaseUrl: "sqlite::memory:" });
export const store = openTestStore;
`,
  "longhaul.config.mjs": `import { defineConfig, task } from "longhaul";

export const hello = task({
  id: "app.hello",
  run: async (input, { step }) => {
    const greeting = await step.run("greet", () => \`hello \${input.name}\`);
    const echoed = await step.job("echo", { provider: "sim", input: { instruction: "echo", text: greeting } });
    return { greeting, echoed };
  },
});

export default defineConfig({ tasks: [hello] });
`,
  "entries.mjs": `import * as longhaul from "longhaul";
import * as server from "longhaul/server";
import * as client from "longhaul/client";
import * as testing from "longhaul/testing";

const fns = (m, names) => names.filter((n) => m[n] !== undefined);
const store = await testing.openTestStore({ clock: new testing.ManualClock() });
// Reads the tasks table: the migrations shipped as .sql beside the compiled store have run.
const migratedInMemory = (await store.getTask("tn_none", "t_none")) === null;
await store.close();
console.log(JSON.stringify({
  longhaul: fns(longhaul, ["createLonghaul", "defineConfig", "defineTask", "geminiProvider", "graphTask", "httpProvider", "openaiProvider", "task"]),
  server: fns(server, ["PostgresStore", "SqliteStore", "createLonghaul", "fetchHandler", "openStore", "toLambdaHandler"]),
  client: fns(client, ["LonghaulClient", "LonghaulClientError"]),
  testing: fns(testing, ["ManualClock", "openTestStore", "startSimulator"]),
  migratedInMemory,
}));
`,
  // Records every module URL resolved after it, from a loader hook (hooks run on their own thread).
  "record-loads.mjs": `import { register } from "node:module";
register("./resolve-hook.mjs", import.meta.url);
`,
  "resolve-hook.mjs": `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(process.env.LOADS_FILE, r.url + "\\n");
  return r;
}
`,
  // Imports one entry, then prints what was loaded: resolved URLs and the CommonJS cache.
  "loads.mjs": `import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
await import(process.argv[2]);
const urls = readFileSync(process.env.LOADS_FILE, "utf8").split("\\n").filter((u) => u.startsWith("file:"));
const cjs = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify([...urls.map((u) => fileURLToPath(u)), ...cjs]));
`,
};

test("the packed package installs and runs under plain node", { timeout: 20 * 60_000 }, async (t) => {
  const started = Date.now();
  const seconds = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
  const tmp = tempDir("longhaul-package-");
  let dev: Running | undefined;
  try {
    const tarball = await packTarball(tmp.dir);
    t.diagnostic(`${basename(tarball)}: ${tarballKb(tarball)}, packed in ${seconds()}`);

    const app = join(tmp.dir, "app");
    if (!(await scratchApp(t, app, APP_FILES, tarball, [], "package.test.ts"))) return;
    t.diagnostic(`installed at ${seconds()}`);

    // Every entry point, imported by name under plain node.
    const { stdout: entries } = await node(["entries.mjs"], app);
    assert.deepEqual(JSON.parse(entries), {
      longhaul: [
        "createLonghaul",
        "defineConfig",
        "defineTask",
        "geminiProvider",
        "graphTask",
        "httpProvider",
        "openaiProvider",
        "task",
      ],
      server: [
        "PostgresStore",
        "SqliteStore",
        "createLonghaul",
        "fetchHandler",
        "openStore",
        "toLambdaHandler",
      ],
      client: ["LonghaulClient", "LonghaulClientError"],
      testing: ["ManualClock", "openTestStore", "startSimulator"],
      migratedInMemory: true,
    });

    // What an import loads, recorded by a resolve hook and the CommonJS cache.
    const loaded = async (entry: string): Promise<string[]> => {
      const { stdout } = await node(["--import", "./record-loads.mjs", "loads.mjs", entry], app, {
        LOADS_FILE: join(app, `loads-${basename(entry)}.txt`),
      });
      return JSON.parse(stdout) as string[];
    };
    const serverOf = (files: string[]) =>
      SERVER_DEPENDENCIES.filter((d) => files.some((f) => f.includes(`/node_modules/${d}/`)));
    const client = await loaded("longhaul/client");
    assert.ok(
      client.some((f) => f.includes("/node_modules/longhaul/dist/client/")),
      "the recorder sees the client's own modules",
    );
    assert.deepEqual(serverOf(client), [], "longhaul/client loads no server dependency");
    // The recorder would see them: longhaul/server loads them all but the database drivers,
    // optional dependencies loaded when a database of theirs is first opened.
    assert.deepEqual(
      serverOf(await loaded("longhaul/server")),
      SERVER_DEPENDENCIES.filter((d) => d !== "better-sqlite3" && d !== "pg"),
    );

    const { stdout: version } = await node(["node_modules/.bin/longhaul", "--version"], app);
    assert.equal(version.trim(), packageVersion());

    // The installed CLI runs the app's config: a task from the app, run to the end.
    const port = await freePort();
    dev = startNode(
      [
        "node_modules/.bin/longhaul",
        "dev",
        "--config",
        "longhaul.config.mjs",
        "--port",
        String(port),
        "--host",
        "127.0.0.1",
        "--sim-port",
        "0",
        "--data-dir",
        join(app, "data"),
      ],
      app,
      { LONGHAUL_LOG_LEVEL: "warn" },
    );
    const key = await devKeyOf(dev!);
    const base = `http://127.0.0.1:${port}`;
    const api = jsonApi(base, key);
    const submitted = await api("/v1/tasks", { type: "app.hello", input: { name: "package" } });
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const done = await waitFor(
      async () => {
        const r = await api(`/v1/tasks/${submitted.body.task_id}`);
        return ["succeeded", "failed", "timed_out", "canceled"].includes(r.body.status) ? r.body : null;
      },
      30_000,
      "the app's task to finish",
    );
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    assert.deepEqual(done.output, { greeting: "hello package", echoed: { text: "hello package" } });

    const page = await fetch(`${base}/`);
    assert.equal(page.status, 200, "the dashboard is served from the package's web/dist");
    assert.match(page.headers.get("content-type") ?? "", /text\/html/);
    assert.match(await page.text(), /<title>longhaul<\/title>/);

    // A TypeScript consumer that checks every declaration (skipLibCheck off): the types the
    // published declarations import (pg, better-sqlite3, node) come with the package.
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const checked = await node([tsc, "-p", "tsconfig.json"], app, {}, 600_000).catch(
      (err: { stdout?: string }) => ({ stdout: `tsc failed:\n${err.stdout ?? String(err)}` }),
    );
    assert.equal(checked.stdout.trim(), "", "tsc with skipLibCheck: false passes on a consumer app");

    // Source maps and declaration maps ship, with the sources they point at.
    for (const f of ["dist/app.js.map", "dist/app.d.ts.map", "src/app.ts"]) {
      assert.ok(existsSync(join(app, "node_modules", "longhaul", f)), f);
    }

    // An app that wants only the client: no optional dependency, so no native build.
    const clientApp = join(tmp.dir, "client-app");
    if (!(await scratchApp(t, clientApp, CLIENT_APP_FILES, tarball, ["--omit=optional"], "package.test.ts")))
      return;
    for (const native of ["better-sqlite3", "pg"]) {
      assert.ok(!existsSync(join(clientApp, "node_modules", native)), `${native} is not installed`);
    }
    assert.ok(!readdirSync(join(clientApp, "node_modules")).includes("node-gyp-build"));
    const { stdout: viaClient } = await node(["client.mjs", base, key], clientApp);
    const followed = JSON.parse(viaClient) as { status: string; output: unknown };
    assert.equal(followed.status, "succeeded");
    // The server half says what is missing, in words.
    const { stdout: refused } = await node(["server.mjs"], clientApp);
    const [sqlite, postgres] = refused.trim().split("\n");
    assert.match(sqlite ?? "", /^CONFIG_INVALID .*npm install better-sqlite3/);
    assert.match(postgres ?? "", /^CONFIG_INVALID .*npm install pg/);
    t.diagnostic(`pack, install and run took ${seconds()}`);
  } finally {
    await dev?.stop();
    tmp.cleanup();
  }
});
