// Suspended tasks (issue #4), two parts in one run.
//
// 1. Memory per suspended task: the heap and RSS of one process holding N tasks suspended on
//    a `step.callback` (ARCHITECTURE §2: a suspended task is rows in the store and nothing else),
//    beside the peer measured the same way in the same process: N suspensions held in memory
//    (a pending promise, its resolver in a map by task id, the awaiting async frame).
// 2. Resume latency: callbacks POSTed over loopback at an open-loop 500/s, from the POST being
//    sent to the task being `succeeded` in the store, beside the same POSTs at the same rate
//    against a no-op route on the same server (the cost of HTTP alone: the ceiling), and the
//    disk's own latency at the same rate: a 512-byte append and fdatasync on the same disk (every
//    durable write waits for one; a resume makes several in turn).
import { fork, spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { createLonghaul, type Longhaul } from "../src/app.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { ulidGenerator } from "../src/core/ids.ts";
import { defineTask } from "../src/core/task-type.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { exited } from "./children.ts";
import { commandLine, fmt, machineLine, recordResult, table } from "./load.ts";

const N = Number(process.env.BENCH_TASKS ?? 100_000);
const M = Number(process.env.BENCH_CALLBACKS ?? 5_000);
const RATE = 500;
/** Tasks suspended before the memory baseline, so one-time costs (JIT, statement cache) are not counted. */
const WARM_TASKS = 1000;
/** Submits in flight at once; the next chunk goes once the last one has suspended. */
const CHUNK = 1000;
/** Unmeasured POSTs per route before part 2, at the same rate. */
const WARM_POSTS = 250;
const ROUNDS = 5;
/** How long suspending all N tasks may take: 10 minutes, or 2 ms a task for a larger N (1M: 33 min). */
const FILL_LIMIT_MS = Math.max(10 * 60_000, N * 2);
const DRAIN_LIMIT_MS = 60_000;
/** No new round of part 2 starts after this long. */
const PART2_LIMIT_MS = 5 * 60_000;
const GC_MARKER = "LONGHAUL_BENCH_EXPOSED_GC";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MB = (bytes: number) => fmt(bytes / 1024 / 1024, 1);

const gc = (globalThis as { gc?: () => void }).gc;
if (gc) {
  await main(gc);
} else {
  // Memory is read after a forced GC, which needs --expose-gc: run again with it.
  if (process.env[GC_MARKER]) throw new Error("global.gc is missing even with --expose-gc");
  const child = spawn(
    process.execPath,
    ["--expose-gc", ...process.execArgv, fileURLToPath(import.meta.url)],
    {
      stdio: "inherit",
      env: { ...process.env, [GC_MARKER]: "1" },
    },
  );
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

async function main(gc: () => void): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "longhaul-bench-"));
  try {
    await run(gc, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function run(gc: () => void, dir: string): Promise<void> {
  const dbPath = join(dir, "longhaul.db");
  const store = new SqliteStore({ path: dbPath });
  await store.migrate();
  const tenant = await store.createTenant({ name: "bench", keyHash: hashApiKey(newApiKey()) });
  const suspend = defineTask("bench.suspend", async (_input, step) =>
    step.callback("cb", { timeout: "48h" }),
  );
  const app = await createLonghaul({
    store,
    taskTypes: [suspend],
    logger: pino({ level: "silent" }),
    // Thousands of callbacks a minute from one address: far past the default per-address rate.
    limits: { callbacks_per_min: 0 },
  });
  app.server.post("/bench/noop", async () => ({ ok: true }));
  const url = await app.listen({ port: 0 });
  try {
    await measure(gc, dbPath, store, tenant.id, app, url);
  } finally {
    await app.close();
  }
}

async function measure(
  gc: () => void,
  dbPath: string,
  store: SqliteStore,
  tenantId: string,
  app: Longhaul,
  url: string,
): Promise<void> {
  // A count of every waiting task reads the whole index (O(N), ~10 ms at 200k): the fill
  // asks only which of the chunk's tasks wait, and `waiting()` is read only between parts.
  const countWaiting = store.db
    .prepare("SELECT count(*) FROM tasks WHERE tenant_id = ? AND status = 'waiting'")
    .pluck();
  const waiting = () => countWaiting.get(tenantId) as number;
  const waitingAmong = store.db
    .prepare("SELECT id FROM tasks WHERE id IN (SELECT value FROM json_each(?)) AND status = 'waiting'")
    .pluck();

  /**
   * Submits `count` tasks through the store and returns once all of them wait on their callback.
   * The worker's poke() only ends a sleep already begun: a commit signalled while its loop
   * awaits claim() or nextRunAt() goes unseen, and the loop then sleeps its idle interval (1 s)
   * with work due, which leaves a backlog draining at about one claim batch per second. An
   * empty enqueue every 20 ms, whose commit signals work, wakes it while the store fills;
   * part 2 runs without it.
   */
  const suspendTasks = async (count: number) => {
    const nudge = setInterval(() => void store.enqueue([]), 20);
    try {
      await fill(count);
    } finally {
      clearInterval(nudge);
    }
  };
  const fill = async (count: number) => {
    const until = performance.now() + FILL_LIMIT_MS;
    let lastReport = performance.now();
    for (let done = 0; done < count; ) {
      const n = Math.min(CHUNK, count - done);
      const submitted = await Promise.all(
        Array.from({ length: n }, () =>
          store.submitTask({
            tenantId,
            type: "bench.suspend",
            input: {},
            clientRequestId: null,
            userId: null,
            traceId: null,
          }),
        ),
      );
      done += n;
      let pending = submitted.map((r) => r.task.id);
      while (pending.length > 0) {
        if (performance.now() > until) throw new Error(`tasks did not suspend within ${FILL_LIMIT_MS} ms`);
        await sleep(10);
        const suspended = new Set(waitingAmong.all(JSON.stringify(pending)) as string[]);
        pending = pending.filter((id) => !suspended.has(id));
      }
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        process.stderr.write(`suspended ${done}/${count}\n`);
      }
    }
  };

  /** Heap and RSS after forced full collections, with the worker idle. */
  const settled = async () => {
    await sleep(300);
    for (let i = 0; i < 4; i++) {
      gc();
      await new Promise((r) => setImmediate(r));
    }
    gc();
    return process.memoryUsage();
  };
  /** The database file after a checkpoint, so the WAL holds nothing. */
  const dbBytes = () => {
    store.db.pragma("wal_checkpoint(TRUNCATE)");
    return statSync(dbPath).size;
  };

  // ── Part 1: memory per suspended task ──
  await suspendTasks(WARM_TASKS);
  const dbBefore = dbBytes();
  const before = await settled();
  const fillStarted = performance.now();
  await suspendTasks(N);
  const fillSeconds = (performance.now() - fillStarted) / 1000;
  const after = await settled();
  const dbAfter = dbBytes();
  const suspendedNow = waiting();

  // The peer: the same N suspensions kept in memory, as an engine without a store would.
  const ids = ulidGenerator();
  const peerBefore = await settled();
  const holders = new Map<string, (v: unknown) => void>();
  for (let i = 0; i < N; i++) {
    const id = ids.next("t");
    void (async () => {
      const output = await new Promise((resolve) => holders.set(id, resolve));
      return { id, output };
    })();
  }
  const peerAfter = await settled();
  for (const resume of holders.values()) resume(null);
  holders.clear();
  await settled();

  const perTask = (a: number, b: number) => (b - a) / N;
  const peerHeap = perTask(peerBefore.heapUsed, peerAfter.heapUsed);
  const peerRss = perTask(peerBefore.rss, peerAfter.rss);
  const memRow = (name: string, a: NodeJS.MemoryUsage, b: NodeJS.MemoryUsage) => ({
    case: name,
    "heap before MB": MB(a.heapUsed),
    "heap after MB": MB(b.heapUsed),
    "heap B/task": fmt(perTask(a.heapUsed, b.heapUsed), 1),
    "RSS before MB": MB(a.rss),
    "RSS after MB": MB(b.rss),
    "RSS B/task": fmt(perTask(a.rss, b.rss), 1),
    "heap vs in-memory": fmt(perTask(a.heapUsed, b.heapUsed) / peerHeap, 3),
    "RSS vs in-memory": fmt(perTask(a.rss, b.rss) / peerRss, 3),
  });

  // ── Part 2: resume latency with callbacks arriving at 500/s ──
  const pool = store.db
    .prepare(
      "SELECT task_id AS id, attempts, deadline_at AS deadlineAt FROM steps WHERE step_id = 'cb' AND status = 'waiting' LIMIT ?",
    )
    .all(WARM_POSTS + M) as { id: string; attempts: number; deadlineAt: number | null }[];
  if (pool.length < WARM_POSTS + 1) throw new Error(`only ${pool.length} tasks wait; raise BENCH_TASKS`);
  const callbacks = pool.map((t) => ({
    id: t.id,
    url: app.urls.callback(tenantId, t.id, {
      stepId: "cb",
      attempts: t.attempts,
      deadlineAt: t.deadlineAt,
    }),
  }));
  const measured = callbacks.length - WARM_POSTS;
  const perRound = Math.ceil(measured / ROUNDS);

  // Resume detection: whenever task events are announced (the store announces `task.succeeded`
  // once the write that ends the task is durable) and every 10 ms as a fallback, one query reads
  // the `task.succeeded` events appended since the last look, and the time each task was first
  // seen ended is kept. The generator's send times and these are the same wall clock.
  const wallNow = () => performance.timeOrigin + performance.now();
  const endedAt = new Map<string, number>();
  let lastSeq =
    (store.db.prepare("SELECT coalesce(max(seq), 0) FROM task_events").pluck().get() as number) ?? 0;
  const succeededSince = store.db.prepare(
    "SELECT seq, task_id AS id FROM task_events WHERE seq > ? AND type = 'task.succeeded' ORDER BY seq",
  );
  let checkQueued = false;
  const check = () => {
    checkQueued = false;
    const seen = wallNow();
    for (const r of succeededSince.all(lastSeq) as { seq: number; id: string }[]) {
      lastSeq = r.seq;
      if (!endedAt.has(r.id)) endedAt.set(r.id, seen);
    }
  };
  const unsubscribe = store.onTaskEvents(() => {
    if (checkQueued) return;
    checkQueued = true;
    setImmediate(check);
  });
  const fallback = setInterval(check, 10);

  interface Phase {
    latencies: number[];
    errors: number;
    sent: number;
    seconds: number;
  }
  // The load generator: a process of its own (bench/suspended-load.mjs). After each callback
  // phase it sends the time each accepted POST went out; the round ends once their tasks have
  // ended here (or DRAIN_LIMIT_MS has passed: those count as lost).
  const resumeMs: number[] = [];
  let recording = false;
  let lost = 0;
  const generator = fork(fileURLToPath(new URL("./suspended-load.mjs", import.meta.url)), [], {
    execArgv: [],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const onRound = async (sent: [string, number][]) => {
    const until = performance.now() + DRAIN_LIMIT_MS;
    while (sent.some(([id]) => !endedAt.has(id)) && performance.now() < until) await sleep(10);
    for (const [id, at] of sent) {
      const ended = endedAt.get(id);
      if (!recording) continue;
      if (ended === undefined) lost++;
      else resumeMs.push(ended - at);
    }
    generator.send({ type: "drained" });
  };
  const result = await new Promise<{
    phases: Record<"noop" | "disk" | "callbacks", Phase[]>;
    failures: Record<string, number>;
    resent: { reused: number; fresh: number };
  }>((resolve, reject) => {
    generator.on("message", (m: { type: string; sent?: [string, number][] }) => {
      if (m.type === "recording") recording = true;
      else if (m.type === "round") void onRound(m.sent!);
      else if (m.type === "done") resolve(m as never);
    });
    // Its last message (every latency of the run) may still be on its way when the process has
    // exited: the IPC channel closes after the messages sent on it have been read.
    generator.once("exit", (code) => {
      const failed = () => reject(new Error(`the load generator exited (code ${code}) before it was done`));
      if (generator.connected) generator.once("disconnect", () => setImmediate(failed));
      else setImmediate(failed);
    });
    generator.send({
      noopUrl: `${url}/bench/noop`,
      callbacks,
      rate: RATE,
      warm: WARM_POSTS,
      perRound,
      rounds: ROUNDS,
      diskPath: join(dirname(dbPath), "fdatasync-probe"),
      timeoutMs: DRAIN_LIMIT_MS,
      limitMs: PART2_LIMIT_MS,
    });
  });
  await exited(generator);
  recording = false;
  clearInterval(fallback);
  unsubscribe();
  const noopPhases = result.phases.noop;
  const diskPhases = result.phases.disk;
  const callbackPhases = result.phases.callbacks;
  const failures = new Map(Object.entries(result.failures));

  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const at = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? 0;
  const merge = (phases: Phase[]) => ({
    latencies: sorted(phases.flatMap((p) => p.latencies)),
    errors: phases.reduce((s, p) => s + p.errors, 0),
    sent: phases.reduce((s, p) => s + p.sent, 0),
    perSecond: phases.reduce((s, p) => s + p.sent - 1, 0) / phases.reduce((s, p) => s + p.seconds, 0) || 0,
  });
  const ceiling = merge(noopPhases);
  const diskSyncs = merge(diskPhases);
  const callbackPosts = merge(callbackPhases);
  const resumes = sorted(resumeMs);
  const latencyRow = (
    name: string,
    xs: number[],
    extra: { requests: number; perSecond: number; errors: number },
  ) => ({
    case: name,
    requests: extra.requests,
    "sent/s": fmt(extra.perSecond, 0),
    "p50 ms": fmt(at(xs, 0.5), 2),
    "p99 ms": fmt(at(xs, 0.99), 2),
    "max ms": fmt(xs.at(-1) ?? 0, 2),
    "p50 vs ceiling": fmt(at(xs, 0.5) / at(ceiling.latencies, 0.5), 2),
    "p99 vs ceiling": fmt(at(xs, 0.99) / at(ceiling.latencies, 0.99), 2),
    errors: extra.errors,
  });

  // The report: printed and appended to bench/RESULTS.md with the machine and the command.
  const report: string[] = [];
  const say = (text: string) => report.push(text);
  say(
    `\nN = ${N} suspended tasks (after ${WARM_TASKS} before the baseline), M = ${callbackPosts.sent} callbacks at ${RATE}/s, ` +
      `${availableParallelism()} cores, Node ${process.version}, SQLite WAL synced before each answer, loopback\n`,
  );
  say(
    table([
      memRow(`in-memory: ${N} pending promises (resolver by id + async frame)`, peerBefore, peerAfter),
      memRow(`longhaul: ${N} tasks suspended on step.callback (SQLite)`, before, after),
    ]),
  );
  say(
    `\nafter a forced full GC each time; ${suspendedNow} tasks waiting at the second reading; ` +
      `${N} tasks suspended in ${fmt(fillSeconds, 1)} s (${fmt(N / fillSeconds, 0)}/s, ${CHUNK} submits in flight)`,
  );
  say(
    `database file (checkpointed): ${MB(dbBefore)} MB → ${MB(dbAfter)} MB, ` +
      `${fmt((dbAfter - dbBefore) / N, 0)} B per suspended task on disk (informative)\n`,
  );
  say(
    table([
      latencyRow("ceiling: POST /bench/noop, response", ceiling.latencies, {
        requests: ceiling.sent,
        perSecond: ceiling.perSecond,
        errors: ceiling.errors,
      }),
      latencyRow("reference: 512 B write + fdatasync, same disk", diskSyncs.latencies, {
        requests: diskSyncs.sent,
        perSecond: diskSyncs.perSecond,
        errors: diskSyncs.errors,
      }),
      latencyRow("POST /v1/callbacks/:token, response", callbackPosts.latencies, {
        requests: callbackPosts.sent,
        perSecond: callbackPosts.perSecond,
        errors: callbackPosts.errors,
      }),
      latencyRow("resume: POST sent → task succeeded in the store", resumes, {
        requests: callbackPosts.sent,
        perSecond: callbackPosts.perSecond,
        errors: callbackPosts.errors + lost,
      }),
    ]),
  );
  const failed = [...failures].map(([answer, n]) => `${n} × ${answer}`).join(", ") || "none";
  say(
    `\n${callbackPhases.length} of ${ROUNDS} rounds alternating the no-op route, the disk reference and the callbacks (no round starts after ` +
      `${PART2_LIMIT_MS / 60_000} min), ${WARM_POSTS} unmeasured POSTs per route first; resume errors = ` +
      `callback POSTs not answered 200 (${failed}) + ${lost} accepted but not seen succeeded within ` +
      `${DRAIN_LIMIT_MS / 1000} s of the round's last POST; POSTs sent again after a connection reset before any ` +
      `answer (counted from the first send): ${result.resent.reused} on a reused keep-alive socket, ${result.resent.fresh} on a new one`,
  );
  recordResult(
    "suspended tasks: memory and resume latency",
    machineLine(),
    commandLine("bench:suspended", ["BENCH_TASKS", "BENCH_CALLBACKS"]),
    report.join("\n").trim(),
  );
}
