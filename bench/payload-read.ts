// GET /v1/tasks/:id for a task whose output is 5 MB of JSON (kept in the blob store, answered as
// a link) beside one with a small output, one with a 400 KB output (kept in the blob store and
// read back inline), and a no-op route of the same server (the ceiling: HTTP alone). The
// server runs in this process on a fresh SQLite file with its blobs in a temporary folder; the
// load comes from bench/get-load.mjs in a process of its own, BENCH_REQUESTS GETs (default
// 2000), BENCH_CONCURRENCY at a time (default 16), three interleaved rounds, the median kept.
// Also the bytes each task's output column holds, read from the SQLite file. The table goes to
// stdout and is appended to bench/RESULTS.md.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { createLonghaul } from "../src/app.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask } from "../src/core/task-type.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { startChild, stopChild } from "./children.ts";
import { commandLine, fmt, machineLine, recordResult, table } from "./load.ts";

const TOTAL = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const root = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "longhaul-bench-payload-"));

/** About `bytes` bytes of JSON. */
const value = (bytes: number) => ({
  rows: Array.from({ length: Math.ceil(bytes / 120) }, (_, i) => ({ i, text: `row-${i}-`.padEnd(100, "x") })),
});

const db = join(dir, "longhaul.db");
const store = new SqliteStore({ path: db });
await store.migrate();
const key = newApiKey();
await store.createTenant({ name: "bench", keyHash: hashApiKey(key) });
const app = await createLonghaul({
  store,
  blobDir: join(dir, "blobs"),
  taskTypes: [
    defineTask("small", async () => ({ ok: true })),
    defineTask("medium", async () => value(400 * 1024)),
    defineTask("big", async (_input, step) => step.run("big", () => value(5 * 1024 * 1024))),
  ],
  logger: (await import("pino")).pino({ level: "silent" }),
  limits: { api_per_min: 0 },
  worker: { idleMs: 20 },
});
app.server.get("/bench/noop", async () => ({ ok: true }));
const url = await app.listen({ port: 0, host: "127.0.0.1" });

const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
const submit = async (type: string) => {
  const r = await fetch(`${url}/v1/tasks`, { method: "POST", headers, body: JSON.stringify({ type }) });
  return ((await r.json()) as { task_id: string }).task_id;
};
const ids = { small: await submit("small"), medium: await submit("medium"), big: await submit("big") };
for (const id of Object.values(ids)) {
  for (;;) {
    const t = (await (await fetch(`${url}/v1/tasks/${id}`, { headers })).json()) as { status: string };
    if (t.status === "succeeded") break;
    if (t.status === "failed") throw new Error(`task ${id} failed`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Run {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  bytes: number;
}
async function loadOf(path: string): Promise<Run> {
  const { child, output } = startChild(root, [
    "bench/get-load.mjs",
    "--url",
    url + path,
    "--total",
    String(TOTAL),
    "--concurrency",
    String(CONCURRENCY),
    "--key",
    key,
  ]);
  await new Promise((r) => child.once("exit", r));
  const line = output().trim().split("\n").pop() ?? "";
  if (!line.startsWith("{")) throw new Error(`the load generator failed:\n${output()}`);
  await stopChild(child);
  return JSON.parse(line) as Run;
}

const cases = {
  ceiling: "/bench/noop",
  small: `/v1/tasks/${ids.small}`,
  medium: `/v1/tasks/${ids.medium}`,
  big: `/v1/tasks/${ids.big}`,
};
type Case = keyof typeof cases;
for (const path of Object.values(cases)) await loadOf(path);
const runs: Record<Case, Run[]> = { ceiling: [], small: [], medium: [], big: [] };
for (let round = 0; round < 3; round++) {
  for (const name of Object.keys(cases) as Case[]) runs[name].push(await loadOf(cases[name]));
}
const median = (name: Case) => [...runs[name]].sort((a, b) => a.perSecond - b.perSecond)[1]!;

const sqlite = new Database(db, { readonly: true });
const columnBytes = (id: string) =>
  (
    sqlite.prepare("SELECT length(CAST(output AS BLOB)) AS n FROM tasks WHERE id = ?").get(id) as {
      n: number;
    }
  ).n;
const ceiling = median("ceiling");
const small = median("small");
const row = (name: string, r: Run, column: number | null) => ({
  case: name,
  "req/s": fmt(r.perSecond, 0),
  "p50 ms": fmt(r.p50Ms, 2),
  "p99 ms": fmt(r.p99Ms, 2),
  "vs ceiling": fmt(r.perSecond / ceiling.perSecond, 2),
  "vs small output": fmt(r.perSecond / small.perSecond, 2),
  "answer bytes": r.bytes,
  "output column bytes": column ?? "—",
  errors: r.errors,
});
const text = [
  `${TOTAL} GETs per round, ${CONCURRENCY} concurrent, keep-alive, loadgen in its own process; median of 3 interleaved rounds`,
  "",
  table([
    row("ceiling: no-op route", ceiling, null),
    row("GET /v1/tasks/:id, small output", small, columnBytes(ids.small)),
    row("GET /v1/tasks/:id, 400 KB output read back inline", median("medium"), columnBytes(ids.medium)),
    row("GET /v1/tasks/:id, 5 MB output linked", median("big"), columnBytes(ids.big)),
  ]),
].join("\n");
sqlite.close();
recordResult(
  "GET /v1/tasks/:id with large outputs",
  machineLine(),
  commandLine("bench:payload-read", ["BENCH_REQUESTS", "BENCH_CONCURRENCY"]),
  text,
);
await app.close();
rmSync(dir, { recursive: true, force: true });
