// Queue throughput on PostgreSQL: longhaul's PostgresStore queue beside pg-boss 10 and
// graphile-worker 0.17 on the same database in the same run, each in a schema of its own that
// is dropped at the end. Then longhaul drained by one worker process against two.
//
// 1. Enqueue and drain of BENCH_JOBS (default 20,000) no-op jobs per system and round.
//    Enqueue: each system's bulk insert, 500 jobs per call, one call at a time (longhaul
//    `store.enqueue`, pg-boss `insert`, graphile-worker `addJobs`). Drain: BENCH_CONCURRENCY
//    (default 16) jobs in flight, from the first job in a handler's hands to the database
//    showing none left to do. longhaul is drained with the store calls of its worker loop
//    (bench/queue-pg/drain.ts: claim up to the free slots, one `complete` call per item, which
//    the store folds with the others made at the same moment into one statement) rather than
//    the whole engine, whose handlers all do real work. pg-boss runs one `work()` worker
//    with `batchSize` = concurrency, its handler running the batch at once (its maintainer's
//    advice for concurrency in v10); after a full batch it calls
//    `notifyWorker` (documented to bypass the polling interval) so it fetches again at once
//    instead of sleeping up to `pollingIntervalSeconds` (minimum 0.5 s). graphile-worker runs
//    with `concurrency` and its documented batching for throughput: `localQueue.size` =
//    concurrency + 1 and `completeJobBatchDelay` = `failJobBatchDelay` = 0. Every system gets a
//    pool of 10 connections, each one's default. pg-boss 10's fetch sorts every pending job of
//    the queue to pick the next batch (`ORDER BY priority DESC, created_on, id` over an index on
//    `(name, start_after)`), so its drain rate falls as the backlog grows: compare at one N.
// 2. longhaul only: enqueue BENCH_JOBS, then drain them with one worker process, or two
//    (bench/queue-pg/worker.ts, each with its own store and BENCH_CONCURRENCY in flight), timed
//    from the start signal to the database showing the queue empty. Each process reports the
//    ids it completed; an id completed twice across processes is counted.
//
// Each drain also reports CPU per job: this process's (the system's client; the other systems
// sit idle meanwhile) and PostgreSQL's, read from /proc for every `postgres` process.
//
// Rounds are interleaved (the order rotates each round) after one small warm-up round, and
// each figure is the median of BENCH_ROUNDS (default 3). PostgreSQL must be on loopback:
// BENCH_POSTGRES_URL, else LONGHAUL_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Logger, makeWorkerUtils, type Runner, run, type WorkerUtils } from "graphile-worker";
import pg from "pg";
import PgBoss from "pg-boss";
import { openStore } from "../src/store/open-store.ts";
import type { NewWorkItem, Store } from "../src/store/store.ts";
import { processCpu } from "./children.ts";
import { commandLine, fmt, machineLine, recordResult, table } from "./load.ts";
import { drain } from "./queue-pg/drain.ts";
import type { FromWorker, ToWorker } from "./queue-pg/worker.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_JOBS = Math.min(1000, JOBS);
const ENQUEUE_BATCH = 500;
const POOL = 10;
const LEASE_MS = 30_000;
/** Any one enqueue or drain taking longer than this ends the bench. */
const PHASE_TIMEOUT_MS = 180_000;
const BASE_URL =
  process.env.BENCH_POSTGRES_URL ??
  process.env.LONGHAUL_TEST_POSTGRES_URL ??
  "postgres://postgres@127.0.0.1:5432/test";

if (!["127.0.0.1", "localhost", "[::1]"].includes(new URL(BASE_URL).hostname)) {
  throw new Error(`This bench only loads a PostgreSQL on loopback, not ${new URL(BASE_URL).hostname}.`);
}

const tag = `${process.pid}_${Date.now().toString(36)}`;
const SCHEMA = { longhaul: `bench_lh_${tag}`, pgboss: `bench_pgboss_${tag}`, graphile: `bench_gw_${tag}` };
const admin = new pg.Pool({ connectionString: BASE_URL, max: 2 });
admin.on("error", () => {});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function withSchema(schema: string): string {
  const u = new URL(BASE_URL);
  u.searchParams.set("schema", schema);
  return u.toString();
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const r = await admin.query<{ n: number }>(sql, params);
  return r.rows[0]?.n ?? 0;
}

async function within<T>(what: string, p: Promise<T>, ms = PHASE_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until `pending()` reads 0, polling every 2 ms. */
async function empty(pending: () => Promise<number>): Promise<void> {
  while ((await pending()) > 0) await sleep(2);
}

/** Counts handler runs per job, and marks the first. */
class Tally {
  readonly runs = new Map<string, number>();
  first: number | null = null;
  private reached!: () => void;
  readonly all: Promise<void>;
  constructor(private readonly expected: number) {
    this.all = new Promise((resolve) => {
      this.reached = resolve;
    });
  }
  hit(id: string): void {
    this.first ??= performance.now();
    this.runs.set(id, (this.runs.get(id) ?? 0) + 1);
    if (this.runs.size === this.expected) this.reached();
  }
  get twice(): number {
    let n = 0;
    for (const c of this.runs.values()) if (c > 1) n++;
    return n;
  }
}

interface Drained {
  seconds: number;
  handled: number;
  twice: number;
  /** CPU time over the drain per job, µs: this process (the system's client) and PostgreSQL's. */
  clientCpu: number;
  dbCpu: number;
}

/**
 * CPU time (ms) used so far by every PostgreSQL process of this machine (the server is on
 * loopback). Processes that exited meanwhile are missed, so the figure is a floor; 0 where
 * /proc is absent.
 */
function postgresCpuMs(): number {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return 0;
  }
  let seconds = 0;
  for (const pid of pids) {
    const p = processCpu(Number(pid));
    if (p?.name.startsWith("postgres")) seconds += p.seconds;
  }
  return seconds * 1000;
}

interface Contender {
  name: string;
  enqueue(ids: number[]): Promise<void>;
  drain(n: number): Promise<Drained>;
  pending(): Promise<number>;
  close(): Promise<void>;
}

/** Times a drain from the first job in a handler to the database showing none left. */
async function timedDrain(
  name: string,
  n: number,
  pending: () => Promise<number>,
  consume: (tally: Tally) => Promise<void>,
): Promise<Drained> {
  const tally = new Tally(n);
  const c0 = process.cpuUsage();
  const db0 = postgresCpuMs();
  await within(`${name} drain`, Promise.all([consume(tally), tally.all.then(() => empty(pending))]));
  const seconds = (performance.now() - tally.first!) / 1000;
  const c = process.cpuUsage(c0);
  return {
    seconds,
    handled: tally.runs.size,
    twice: tally.twice,
    clientCpu: (c.user + c.system) / n,
    dbCpu: ((postgresCpuMs() - db0) * 1000) / n,
  };
}

// ── longhaul ──

let longhaulStore: Store | null = null;

async function longhaul(): Promise<Contender> {
  const store = await openStore(withSchema(SCHEMA.longhaul));
  longhaulStore = store;
  await store.migrate();
  const pending = () => count(`SELECT count(*)::int AS n FROM "${SCHEMA.longhaul}".work_items`);
  return {
    name: "longhaul (PostgresStore)",
    pending,
    async enqueue(ids) {
      for (let i = 0; i < ids.length; i += ENQUEUE_BATCH) {
        const items: NewWorkItem[] = ids
          .slice(i, i + ENQUEUE_BATCH)
          .map((n) => ({ kind: "maintenance", tenantId: null, payload: { n } }));
        await store.enqueue(items);
      }
    },
    drain: (n) =>
      timedDrain("longhaul", n, pending, async (tally) => {
        await drain(store, {
          owner: "bench-parent",
          concurrency: CONCURRENCY,
          leaseMs: LEASE_MS,
          handle: (item) => tally.hit(item.id),
        });
      }),
    async close() {
      longhaulStore = null;
      await store.close();
    },
  };
}

// ── pg-boss ──

const BOSS_QUEUE = "bench-noop";
let boss: PgBoss | null = null;

async function pgBoss(): Promise<Contender> {
  const b = new PgBoss({ connectionString: BASE_URL, schema: SCHEMA.pgboss, max: POOL, schedule: false });
  boss = b;
  let failure: unknown = null;
  b.on("error", (err) => {
    failure ??= err;
  });
  await b.start();
  await b.createQueue(BOSS_QUEUE);
  const pending = () =>
    count(`SELECT count(*)::int AS n FROM "${SCHEMA.pgboss}".job WHERE name = $1 AND state < 'completed'`, [
      BOSS_QUEUE,
    ]);
  return {
    name: "pg-boss",
    pending,
    async enqueue(ids) {
      for (let i = 0; i < ids.length; i += ENQUEUE_BATCH) {
        await b.insert(ids.slice(i, i + ENQUEUE_BATCH).map((n) => ({ name: BOSS_QUEUE, data: { n } })));
      }
    },
    drain: (n) =>
      timedDrain("pg-boss", n, pending, async (tally) => {
        let workerId = "";
        workerId = await b.work(
          BOSS_QUEUE,
          { batchSize: CONCURRENCY, pollingIntervalSeconds: 0.5 },
          async (jobs) => {
            await Promise.all(jobs.map(async (job) => tally.hit(job.id)));
            // A full batch: there is more; fetch again without waiting out the polling interval.
            if (jobs.length === CONCURRENCY && workerId) b.notifyWorker(workerId);
          },
        );
        try {
          await tally.all;
          await empty(pending);
        } finally {
          await b.offWork(BOSS_QUEUE);
        }
        if (failure) throw failure;
      }),
    async close() {
      boss = null;
      await b.stop({ graceful: false, close: true });
    },
  };
}

// ── graphile-worker ──

let graphileRunner: Runner | null = null;
let graphilePool: pg.Pool | null = null;

async function graphileWorker(): Promise<Contender> {
  const pool = new pg.Pool({ connectionString: BASE_URL, max: POOL });
  // A connection the server drops is discarded by the pool; without listeners it would crash.
  pool.on("error", () => {});
  pool.on("connect", (client) => client.on("error", () => {}));
  graphilePool = pool;
  const logger = new Logger(() => () => {});
  const utils: WorkerUtils = await makeWorkerUtils({ pgPool: pool, schema: SCHEMA.graphile, logger });
  await utils.migrate();
  const pending = () => count(`SELECT count(*)::int AS n FROM "${SCHEMA.graphile}".jobs`);
  return {
    name: "graphile-worker",
    pending,
    async enqueue(ids) {
      for (let i = 0; i < ids.length; i += ENQUEUE_BATCH) {
        await utils.addJobs(
          ids.slice(i, i + ENQUEUE_BATCH).map((n) => ({ identifier: "noop", payload: { n } })),
        );
      }
    },
    drain: (n) =>
      timedDrain("graphile-worker", n, pending, async (tally) => {
        const runner = await run({
          pgPool: pool,
          schema: SCHEMA.graphile,
          logger,
          concurrency: CONCURRENCY,
          noHandleSignals: true,
          taskList: {
            noop: async (_payload, helpers) => {
              tally.hit(helpers.job.id);
            },
          },
          preset: {
            worker: {
              localQueue: { size: CONCURRENCY + 1 },
              completeJobBatchDelay: 0,
              failJobBatchDelay: 0,
            },
          },
        });
        graphileRunner = runner;
        try {
          await tally.all;
          await empty(pending);
        } finally {
          graphileRunner = null;
          await runner.stop();
        }
      }),
    async close() {
      await utils.release();
      graphilePool = null;
      await pool.end();
    },
  };
}

// ── worker processes (part 2) ──

const children = new Set<ChildProcess>();
const workerScript = fileURLToPath(new URL("./queue-pg/worker.ts", import.meta.url));
const repoRoot = fileURLToPath(new URL("..", import.meta.url));

interface Child {
  start(): void;
  done: Promise<string[]>;
}

/** Starts one worker process and resolves once its store is open. */
function spawnWorker(i: number): Promise<Child> {
  const child = spawn(process.execPath, ["--import", "tsx", workerScript], {
    cwd: repoRoot,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env: {
      ...process.env,
      BENCH_QUEUE_URL: withSchema(SCHEMA.longhaul),
      BENCH_CONCURRENCY: String(CONCURRENCY),
      BENCH_OWNER: `bench-worker-${i}`,
    },
  });
  children.add(child);
  child.on("exit", () => children.delete(child));
  return new Promise((resolveReady, rejectReady) => {
    let resolveDone!: (ids: string[]) => void;
    let rejectDone!: (err: Error) => void;
    const done = new Promise<string[]>((res, rej) => {
      resolveDone = res;
      rejectDone = rej;
    });
    done.catch(() => {});
    const fail = (err: Error) => {
      rejectReady(err);
      rejectDone(err);
    };
    child.on("message", (m: FromWorker) => {
      if (m.type === "ready")
        resolveReady({ start: () => child.send({ type: "start" } satisfies ToWorker), done });
      else if (m.type === "done") resolveDone(m.completed);
      else fail(new Error(`worker process ${i} failed: ${m.message}`));
    });
    child.on("exit", (code) => fail(new Error(`worker process ${i} exited (${code}) before it was done`)));
    child.on("error", fail);
  });
}

interface ScaleResult {
  seconds: number;
  handled: number;
  twice: number;
  completions: number;
}

async function drainWithProcesses(procs: number): Promise<ScaleResult> {
  const workers = await within(
    "starting worker processes",
    Promise.all(Array.from({ length: procs }, (_, i) => spawnWorker(i))),
  );
  const pending = () => count(`SELECT count(*)::int AS n FROM "${SCHEMA.longhaul}".work_items`);
  const t0 = performance.now();
  for (const w of workers) w.start();
  const lists = await within(`drain by ${procs} processes`, Promise.all(workers.map((w) => w.done)));
  await empty(pending);
  const seconds = (performance.now() - t0) / 1000;
  const runs = new Map<string, number>();
  for (const list of lists) for (const id of list) runs.set(id, (runs.get(id) ?? 0) + 1);
  let twice = 0;
  for (const c of runs.values()) if (c > 1) twice++;
  const completions = lists.reduce((s, l) => s + l.length, 0);
  return { seconds, handled: runs.size, twice, completions };
}

// ── cleanup ──

let cleaned: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaned ??= (async () => {
    for (const child of children) child.kill("SIGTERM");
    const quietly = (p: Promise<unknown> | undefined) => p?.catch(() => {});
    await quietly(graphileRunner?.kill());
    await quietly(boss?.stop({ graceful: false, close: true }));
    await quietly(longhaulStore?.close());
    await quietly(graphilePool?.end());
    for (const schema of Object.values(SCHEMA)) {
      await quietly(admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    }
    await quietly(admin.end());
  })();
  return cleaned;
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void cleanup().finally(() => process.exit(130));
  });
}

// ── the run ──

const median = <T>(xs: T[], by: (x: T) => number): T =>
  [...xs].sort((a, b) => by(a) - by(b))[(xs.length - 1) >> 1]!;
const rotate = <T>(xs: T[], by: number): T[] => xs.map((_, i) => xs[(i + by) % xs.length]!);
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

async function main(): Promise<void> {
  const version =
    (await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v ?? "?";
  const require = createRequire(import.meta.url);
  const versionOf = (name: string) => (require(`${name}/package.json`) as { version: string }).version;

  const contenders = [await longhaul(), await pgBoss(), await graphileWorker()];
  type Round = { enqueue: number; drain: Drained };
  const rounds = new Map<string, Round[]>(contenders.map((c) => [c.name, []]));
  let next = 0;
  const once = async (c: Contender, n: number): Promise<Round> => {
    if ((await c.pending()) !== 0) throw new Error(`${c.name}: the queue is not empty before a round`);
    const ids = range(next, n);
    next += n;
    const t0 = performance.now();
    await within(`${c.name} enqueue`, c.enqueue(ids));
    const enqueue = n / ((performance.now() - t0) / 1000);
    if ((await c.pending()) !== n) throw new Error(`${c.name}: ${await c.pending()} jobs queued, not ${n}`);
    return { enqueue, drain: await c.drain(n) };
  };

  for (const c of contenders) await once(c, WARMUP_JOBS);
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of rotate(contenders, r)) rounds.get(c.name)!.push(await once(c, JOBS));
  }

  const summary = contenders.map((c) => {
    const rs = rounds.get(c.name)!;
    return {
      name: c.name,
      enqueue: median(rs, (x) => x.enqueue).enqueue,
      drain: JOBS / median(rs, (x) => x.drain.seconds).drain.seconds,
      handled: rs.reduce((s, x) => s + x.drain.handled, 0),
      twice: rs.reduce((s, x) => s + x.drain.twice, 0),
      clientCpu: median(rs, (x) => x.drain.clientCpu).drain.clientCpu,
      dbCpu: median(rs, (x) => x.drain.dbCpu).drain.dbCpu,
    };
  });
  const lh = summary[0]!;
  for (const c of contenders.slice(1)) await c.close();

  // Part 2: one worker process against two, interleaved.
  const scale = new Map<number, ScaleResult[]>([
    [1, []],
    [2, []],
  ]);
  for (let r = 0; r < ROUNDS; r++) {
    for (const procs of rotate([1, 2], r)) {
      if ((await contenders[0]!.pending()) !== 0)
        throw new Error("longhaul: the queue is not empty before a round");
      await within("longhaul enqueue", contenders[0]!.enqueue(range(next, JOBS)));
      next += JOBS;
      scale.get(procs)!.push(await drainWithProcesses(procs));
    }
  }
  await contenders[0]!.close();

  // The report: printed and appended to bench/RESULTS.md with the machine and the command.
  const report: string[] = [];
  const say = (text: string) => report.push(text);
  say(
    `\n${JOBS} no-op jobs per system and round, ${CONCURRENCY} in flight, enqueue in batches of ${ENQUEUE_BATCH}, ` +
      `${POOL} pooled connections each; PostgreSQL ${version} on loopback, ${availableParallelism()} cores; ` +
      `pg-boss ${versionOf("pg-boss")}, graphile-worker ${versionOf("graphile-worker")}\n`,
  );
  say(
    table(
      summary.map((s) => ({
        system: s.name,
        "enqueue jobs/s": fmt(s.enqueue, 0),
        "drain jobs/s": fmt(s.drain, 0),
        "longhaul ÷ this, enqueue": fmt(lh.enqueue / s.enqueue, 2),
        "longhaul ÷ this, drain": fmt(lh.drain / s.drain, 2),
        "client CPU µs/job": fmt(s.clientCpu, 0),
        "PostgreSQL CPU µs/job": fmt(s.dbCpu, 0),
        "jobs handled / twice": `${s.handled} / ${s.twice}`,
      })),
    ),
  );
  const one = median(scale.get(1)!, (x) => x.seconds);
  const rows = [1, 2].map((procs) => {
    const rs = scale.get(procs)!;
    const m = median(rs, (x) => x.seconds);
    return {
      "worker processes": procs,
      "in flight": procs * CONCURRENCY,
      "drain jobs/s": fmt(JOBS / m.seconds, 0),
      "vs 1 process": fmt(one.seconds / m.seconds, 2),
      "completions (distinct)": `${rs.reduce((s, x) => s + x.completions, 0)} (${rs.reduce((s, x) => s + x.handled, 0)})`,
      "completed twice": rs.reduce((s, x) => s + x.twice, 0),
    };
  });
  say(`\nlonghaul, ${JOBS} jobs drained by separate worker processes, each with its own store:\n`);
  say(table(rows));
  say(
    `\nmedian of ${ROUNDS} interleaved rounds after a ${WARMUP_JOBS}-job warm-up; drain is timed from the first job ` +
      `in a handler (processes: from the start signal) to the database showing none left`,
  );
  recordResult(
    "PostgreSQL queue drain",
    machineLine(),
    commandLine("bench:queue-pg", ["BENCH_JOBS", "BENCH_CONCURRENCY", "BENCH_ROUNDS", "BENCH_POSTGRES_URL"]),
    report.join("\n").trim(),
  );
}

try {
  await main();
} finally {
  await cleanup();
}
