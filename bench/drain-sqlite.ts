// Queue drain on SQLite: BENCH_JOBS (default 20,000) no-op work items through the store's
// claim/complete (SqliteStore, as `serve` runs it: its writes on the event loop), beside the
// same loop on a bare better-sqlite3 table with the same durability in the same run: the
// ceiling of what a queue on one SQLite file does. Enqueued items are on disk before the
// enqueue returns (synchronous=FULL); claims and completes are answered at COMMIT, before the
// WAL's sync, as longhaul answers them (synchronous=NORMAL: a claim or a bare complete lost to
// a power cut hands its item back, and it runs again).
//
// Both are fed with bulk inserts of 500 items per call, then drained with BENCH_CONCURRENCY
// (default 16) items in flight, from the start of the drain to the queue showing none left.
// longhaul is drained with the store calls of its worker loop (bench/queue-pg/drain.ts, as in
// bench/queue-pg.ts: claim up to the free slots, complete each item, expired-lease recovery at
// most once a second) rather than the whole engine, whose handlers all do real work; the
// completions of one tick are one DELETE in one transaction (SQLite's folded complete). The
// ceiling does the same per round in plain SQL: one transaction claims up to the free slots
// (UPDATE … RETURNING), one deletes them. Every id is completed exactly once, or the bench
// fails. Rounds are interleaved after a warm-up round; each figure is the median of
// BENCH_ROUNDS (default 3). CPU per item is the process's (every thread's) user and system
// time over the drain: less swayed by other work on the machine than the rate, which waits on
// the disk too. Each store lives in a temp dir removed at the end. The table is appended to
// bench/RESULTS.md.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { NewWorkItem } from "../src/store/store.ts";
import { commandLine, fmt, machineLine, recordResult, table } from "./load.ts";
import { drain } from "./queue-pg/drain.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_JOBS = Math.min(5000, JOBS);
const ENQUEUE_BATCH = 500;
const LEASE_MS = 30_000;
const TARGET = 30_000;

const dir = mkdtempSync(join(tmpdir(), "longhaul-drain-sqlite-"));
process.once("exit", () => rmSync(dir, { recursive: true, force: true }));

interface Round {
  enqueue: number;
  drain: number;
  /** Microseconds of CPU per drained item. */
  cpu: number;
}

interface Contender {
  name: string;
  round(n: number): Promise<Round>;
  close(): Promise<void>;
}

const per = (n: number, t0: number) => n / ((performance.now() - t0) / 1000);
const cpuPer = (n: number, c0: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
};

function once(name: string, ids: string[], n: number): void {
  const seen = new Set(ids);
  if (ids.length !== n || seen.size !== n) {
    throw new Error(`${name}: ${ids.length} completions of ${seen.size} distinct items, not ${n} once each`);
  }
}

async function longhaul(): Promise<Contender> {
  const path = join(dir, "longhaul.db");
  const store = new SqliteStore({ path });
  await store.migrate();
  const pending = () => (store.db.prepare("SELECT count(*) AS n FROM work_items").get() as { n: number }).n;
  let next = 0;
  return {
    name: "longhaul (SqliteStore, as serve runs it)",
    async round(n) {
      if (pending() !== 0) throw new Error("longhaul: the queue is not empty before a round");
      let t0 = performance.now();
      for (let i = 0; i < n; i += ENQUEUE_BATCH) {
        const items: NewWorkItem[] = [];
        for (let j = i; j < Math.min(n, i + ENQUEUE_BATCH); j++) {
          items.push({ kind: "maintenance", tenantId: null, payload: { n: next++ } });
        }
        await store.enqueue(items);
      }
      const enqueue = per(n, t0);
      if (pending() !== n) throw new Error(`longhaul: ${pending()} items queued, not ${n}`);
      t0 = performance.now();
      const c0 = process.cpuUsage();
      const ids = await drain(store, { owner: "bench", concurrency: CONCURRENCY, leaseMs: LEASE_MS });
      const rate = per(n, t0);
      const cpu = cpuPer(n, c0);
      if (pending() !== 0) throw new Error(`longhaul: ${pending()} items left after the drain`);
      once("longhaul", ids, n);
      return { enqueue, drain: rate, cpu };
    },
    close: () => store.close(),
  };
}

/** The ceiling: one table, the same durability, the same loop shape, nothing else. */
async function bare(): Promise<Contender> {
  const db = new Database(join(dir, "bare.db"));
  db.pragma("journal_mode = WAL");
  db.exec(`CREATE TABLE q (
    id INTEGER PRIMARY KEY, payload TEXT NOT NULL, status TEXT NOT NULL,
    lease_owner TEXT, lease_expires_at INTEGER, run_at INTEGER NOT NULL);
    CREATE INDEX q_due ON q (status, run_at)`);
  const insert = db.prepare("INSERT INTO q (payload, status, run_at) VALUES (?, 'pending', ?)");
  const enqueue = db.transaction((rows: string[]) => {
    const now = Date.now();
    for (const p of rows) insert.run(p, now);
  });
  const claim = db.transaction(
    (k: number) =>
      db
        .prepare(
          `UPDATE q SET status = 'leased', lease_owner = 'bench', lease_expires_at = ?
           WHERE id IN (SELECT id FROM q WHERE status = 'pending' AND run_at <= ? ORDER BY run_at, id LIMIT ?)
           RETURNING id`,
        )
        .all(Date.now() + LEASE_MS, Date.now(), k) as { id: number }[],
  );
  const del = db.prepare("DELETE FROM q WHERE id = ? AND lease_owner = 'bench'");
  const complete = db.transaction((ids: number[]) => {
    for (const id of ids) del.run(id);
  });
  const pending = () => (db.prepare("SELECT count(*) AS n FROM q").get() as { n: number }).n;
  let next = 0;
  return {
    name: "ceiling: bare better-sqlite3 table",
    async round(n) {
      if (pending() !== 0) throw new Error("bare: the queue is not empty before a round");
      db.pragma("synchronous = FULL");
      let t0 = performance.now();
      for (let i = 0; i < n; i += ENQUEUE_BATCH) {
        const rows: string[] = [];
        for (let j = i; j < Math.min(n, i + ENQUEUE_BATCH); j++) rows.push(JSON.stringify({ n: next++ }));
        enqueue(rows);
      }
      const enq = per(n, t0);
      db.pragma("synchronous = NORMAL");
      t0 = performance.now();
      const c0 = process.cpuUsage();
      const done: string[] = [];
      for (;;) {
        const claimed = claim(CONCURRENCY);
        if (claimed.length === 0) break;
        // The same async hop per item as a handler, then one commit for the round's completions.
        await Promise.all(claimed.map(async () => {}));
        complete(claimed.map((r) => r.id));
        for (const r of claimed) done.push(String(r.id));
      }
      const rate = per(n, t0);
      const cpu = cpuPer(n, c0);
      if (pending() !== 0) throw new Error(`bare: ${pending()} items left after the drain`);
      once("bare", done, n);
      return { enqueue: enq, drain: rate, cpu };
    },
    async close() {
      db.close();
    },
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1]!;

async function main(): Promise<void> {
  const contenders = [await bare(), await longhaul()];
  for (const c of contenders) await c.round(WARMUP_JOBS);
  const rounds = new Map<string, Round[]>(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? contenders : [...contenders].reverse();
    for (const c of order) rounds.get(c.name)!.push(await c.round(JOBS));
  }
  for (const c of contenders) await c.close();

  const ceiling = median(rounds.get(contenders[0]!.name)!.map((r) => r.drain));
  const rows = contenders.map((c) => {
    const rs = rounds.get(c.name)!;
    const drained = median(rs.map((r) => r.drain));
    return {
      what: c.name,
      "enqueue items/s": fmt(median(rs.map((r) => r.enqueue)), 0),
      "drain items/s": fmt(drained, 0),
      "drain rounds": rs.map((r) => fmt(r.drain, 0)).join(", "),
      "CPU µs/item": fmt(median(rs.map((r) => r.cpu)), 1),
      "vs ceiling": fmt(drained / ceiling, 2),
      [`vs ${TARGET / 1000}k target`]: fmt(drained / TARGET, 2),
    };
  });
  const machine = machineLine();
  const command = commandLine("bench:drain-sqlite", ["BENCH_JOBS", "BENCH_CONCURRENCY", "BENCH_ROUNDS"]);
  const text = [
    `${JOBS} no-op items per round, ${CONCURRENCY} in flight, enqueued 500 per call; SQLite WAL, enqueued items on disk before the enqueue returns, claims and completes answered at COMMIT (the ceiling: synchronous=FULL, then NORMAL); median of ${ROUNDS} interleaved rounds after a warm-up round`,
    "",
    table(rows),
  ].join("\n");
  recordResult("SQLite queue drain", machine, command, text);
}

await main();
