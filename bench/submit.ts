// Submit throughput: POST /v1/tasks made durable with group commit, side by side in one run
// with (a) the same server answering a no-op route (the cost of HTTP alone: the ceiling) and
// (b) the same inserts committed one transaction per request (what group commit saves).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createLonghaul } from "../src/app.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask } from "../src/core/task-type.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { fmt, load, table } from "./load.ts";

const TOTAL = Number(process.env.BENCH_REQUESTS ?? 4000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const dir = mkdtempSync(join(tmpdir(), "longhaul-bench-"));

const store = new SqliteStore({ path: join(dir, "longhaul.db") });
await store.migrate();
const key = newApiKey();
const tenant = await store.createTenant({ name: "bench", keyHash: hashApiKey(key) });
const noop = defineTask("noop", async () => null);
const app = await createLonghaul({
  store,
  taskTypes: [noop],
  role: "api",
  logger: (await import("pino")).pino({ level: "silent" }),
  // This measures the engine, not the limiter: one tenant here sends far past the default rate.
  limits: { api_per_min: 0 },
});

// The naive durable write: one transaction, so one fsync, per request.
const naive = new Database(join(dir, "naive.db"));
naive.pragma("journal_mode = WAL");
naive.pragma("synchronous = FULL");
naive.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, tenant TEXT, body TEXT)");
const insert = naive.prepare("INSERT INTO t (tenant, body) VALUES (?, ?)");
app.server.post("/bench/noop", async () => ({ ok: true }));
app.server.post("/bench/naive", async (req) => {
  insert.run(tenant.id, JSON.stringify(req.body));
  return { ok: true };
});
const url = await app.listen({ port: 0 });

const body = JSON.stringify({ type: "noop", input: { text: "hello" } });
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
const post = (path: string) => async () =>
  (await fetch(url + path, { method: "POST", headers, body })).status < 300;

const cases = { ceiling: post("/bench/noop"), submit: post("/v1/tasks"), perRequest: post("/bench/naive") };
type Case = keyof typeof cases;
// Warm the JIT and the connection pool, then interleave rounds so drift hits every case alike.
for (const send of Object.values(cases)) await load(500, CONCURRENCY, send);
const runs: Record<Case, Awaited<ReturnType<typeof load>>[]> = { ceiling: [], submit: [], perRequest: [] };
for (let round = 0; round < 3; round++) {
  for (const name of Object.keys(cases) as Case[])
    runs[name].push(await load(TOTAL, CONCURRENCY, cases[name]));
}
const median = (name: Case) => [...runs[name]].sort((a, b) => a.perSecond - b.perSecond)[1]!;
const ceiling = median("ceiling");
const submit = median("submit");
const perRequest = median("perRequest");
const commitsBefore = store.commits;

const row = (name: string, r: Awaited<ReturnType<typeof load>>) => ({
  case: name,
  "req/s": fmt(r.perSecond, 0),
  "p50 ms": fmt(r.p50Ms),
  "p99 ms": fmt(r.p99Ms),
  "vs ceiling": fmt(r.perSecond / ceiling.perSecond, 2),
  errors: r.errors,
});
console.log(
  `\n${TOTAL} requests per round, ${CONCURRENCY} concurrent, loopback, SQLite WAL synchronous=FULL\n`,
);
console.log(
  table([
    row("ceiling: no-op route", ceiling),
    row("POST /v1/tasks (group commit)", submit),
    row("insert, one commit per request", perRequest),
  ]),
);
console.log(
  `\nmedian of 3 interleaved rounds; group commit folded ${3 * TOTAL + 500} submits into ${commitsBefore} commits`,
);
await app.close();
naive.close();
rmSync(dir, { recursive: true, force: true });
