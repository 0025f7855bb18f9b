// Webhook ingest over real HTTP, each side in a process of its own, measured in one run:
//
// 1. the ceiling: bench/ceiling/standard-webhooks-server.mjs, a bare node:http server that only
//    reads the body and checks the Standard Webhooks signature, then answers 200 `{}` or 401;
//    then the same server with --durable, the durable ceiling: each verified delivery is also
//    a row of one SQLite table (unique by webhook-id), answered once on disk, with group commit
//    and the WAL synced off the loop: what durability alone costs here, with no framework and
//    no queue; then the durable ceiling again with its SQLite writer on a thread of its own
//    (--writer-thread): what moving the writer off the event loop gives on this machine;
// 2. `longhaul serve --role api` (bin/longhaul.mjs, the compiled CLI: run `npm run build`
//    first) on a fresh SQLite file (WAL, synced before each answer), one `standard-webhooks` source for
//    provider `sim` with the same secret: verify, record in the inbox, enqueue, answer;
// 3. `longhaul serve --role all` (API and worker in one process, as under `dev`) on another
//    fresh file: the same, while the worker applies the events as they arrive (they name jobs
//    that do not exist, so each is kept as unmatched: the worker's whole share of the work).
//
// The load comes from bench/load-autocannon.mjs, in its own process: 32 connections
// (BENCH_CONNECTIONS), a 2 s warm-up, then BENCH_SECONDS (default 10) measured, every request
// a distinct delivery signed by the generator. The same load goes to each server, one after
// the other. The `--role api` server then takes the same webhooks at half the rate it reached
// (autocannon's `overallRate`) for its latency there, and a fresh durable ceiling at that rate
// too. Then `serve --role all` starts on the `--role api` run's file, whose events all
// wait to be applied, and `/healthz` is loaded for BENCH_HEALTH_SECONDS (default 5, at most
// BENCH_SECONDS) while its worker applies that backlog, and as long again once the backlog is
// gone (idle): the API's responsiveness under the worker's load. The busy rate counts only the
// answers given while the backlog lasted (the generator counts 2xx per 100 ms; the bench polls
// the backlog). Every server runs with LONGHAUL_LOG_LEVEL=warn (BENCH_LOG_LEVEL), since the
// ceiling writes no log line either.
//
// Durability (ARCHITECTURE §3.1): once each longhaul server has stopped, every webhook-id the
// generator saw answered 2xx must be a row of the inbox; rows beyond those are requests still
// in flight when the generator stopped (at most one per connection and run).
//
// Beside each rate, the server's CPU time over the load (user + system, all its threads, from
// /proc) per request answered: on a 2-core machine the generator takes one core and the rate
// mostly shows how the other is shared; CPU per request is each server's own cost, and its
// ratio to the ceiling's is the fair comparison there. The main thread's share is shown apart:
// it serves HTTP and runs the SQLite writes, so it bounds the rate wherever the other threads
// (the thread pool that syncs, the garbage collector's) find a core of their own.
//
// The table goes to stdout and is appended to bench/RESULTS.md with the machine and the command.
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { children, exited, freePort, processCpu, serveArgs, startChild, stopChild } from "./children.ts";
import { commandLine, fmt, machineLine, recordResult, table } from "./load.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? "warn";
/** The /healthz windows: the busy one's rate counts only the part before the backlog is gone. */
const HEALTH_SECONDS = Number(process.env.BENCH_HEALTH_SECONDS ?? Math.min(5, SECONDS));
const SOURCE = "standard-webhooks";
const WHSEC = `whsec_${randomBytes(24).toString("base64")}`;
/** One key for every longhaul server, which may open a file another one wrote. */
const LONGHAUL_SECRET_KEY = randomBytes(32).toString("base64");
const root = fileURLToPath(new URL("..", import.meta.url));
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Load {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  warmup: { ok: number; non2xx: number } | null;
  ok_ids?: number;
  /** CPU time (user + system, all threads) the server spent per request answered, warm-up included. */
  cpu_us?: number | null;
  /** The same, its main thread's alone (the event loop: HTTP, verification, the handler). */
  main_us?: number | null;
  /** With `series`: 2xx answers per `ms` window of the wall clock, the first from `start` (epoch ms). */
  series?: { start: number | null; ms: number; counts: number[] };
}

const dirs: string[] = [];

const start = (args: string[], env: NodeJS.ProcessEnv = {}) => startChild(root, args, env);

/**
 * The CPU time a process has used so far, in seconds, all its threads and its main thread's;
 * null where there is none. On 2 cores the load generator takes one, so requests per second
 * alone mostly measure how the rest is shared: CPU per request is the server's own cost.
 */
const cpuSeconds = (pid: number | undefined) => (pid === undefined ? null : processCpu(pid));

/** Runs the load generator to its end and returns its JSON line, with `server`'s CPU per request. */
async function load(
  url: string,
  opts: {
    sign: boolean;
    warmup: number;
    seconds?: number;
    idsOut?: string;
    idPrefix?: string;
    series?: boolean;
    /** Requests sent per second over all connections; the most the server takes if unset. */
    rate?: number;
  },
  server?: ChildProcess,
) {
  const cpu0 = cpuSeconds(server?.pid);
  const args = [
    here("./load-autocannon.mjs"),
    "--url",
    url,
    "--seconds",
    String(opts.seconds ?? SECONDS),
    "--warmup",
    String(opts.warmup),
    "--connections",
    String(CONNECTIONS),
  ];
  if (opts.sign) args.push("--sign");
  if (opts.idsOut) args.push("--ids-out", opts.idsOut);
  if (opts.idPrefix) args.push("--id-prefix", opts.idPrefix);
  if (opts.series) args.push("--series");
  if (opts.rate) args.push("--rate", String(Math.round(opts.rate)));
  const { child, output } = start(args, { BENCH_WHSEC: WHSEC });
  const code = await exited(child);
  const last = output().trim().split("\n").at(-1) ?? "";
  if (code !== 0 || !last.startsWith("{"))
    throw new Error(`the load generator failed (${code}):\n${output()}`);
  const r = JSON.parse(last) as Load;
  const cpu1 = cpuSeconds(server?.pid);
  const answered = r.ok + r.non2xx + (r.warmup ? r.warmup.ok + r.warmup.non2xx : 0);
  const known = cpu0 !== null && cpu1 !== null && answered > 0;
  r.cpu_us = known ? ((cpu1.seconds - cpu0.seconds) * 1e6) / answered : null;
  r.main_us = known ? ((cpu1.mainThread - cpu0.mainThread) * 1e6) / answered : null;
  return r;
}

async function waitHealthy(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${output()}`);
    const ok = await fetch(`${url}/healthz`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`the server did not answer /healthz within 30 s:\n${output()}`);
}

/**
 * The ceiling's process under the same load. `durable`: it also records each delivery in a
 * SQLite table and answers once the row is on disk; every id answered 2xx is then checked
 * against that table, as longhaul's are against its inbox.
 */
async function ceiling(
  durable: boolean,
  opts: { rate?: number; writerThread?: boolean } = {},
): Promise<{ load: Load; durability?: Durability }> {
  const { rate, writerThread = false } = opts;
  const dir = mkdtempSync(join(tmpdir(), "longhaul-ingest-ceiling-"));
  dirs.push(dir);
  const file = join(dir, "ceiling.db");
  const args = [
    here("./ceiling/standard-webhooks-server.mjs"),
    ...(durable ? ["--durable", file] : []),
    ...(writerThread ? ["--writer-thread"] : []),
  ];
  const { child, output } = start(args, { BENCH_WHSEC: WHSEC });
  const deadline = Date.now() + 10_000;
  while (!output().includes("\n") && Date.now() < deadline) await sleep(20);
  if (!output().startsWith("{")) throw new Error(`the ceiling did not start:\n${output()}`);
  const { url } = JSON.parse(output().split("\n")[0]!) as { url: string };
  // Only the durable ceiling's answers are checked: the bare one keeps the generator as it was.
  const idsOut = durable ? join(dir, "ok-ids.txt") : undefined;
  let measured: Load;
  try {
    const idPrefix = `${durable ? "durable" : "ceiling"}${writerThread ? "-thread" : ""}${rate ? "-rate" : ""}`;
    measured = await load(
      `${url}/hooks/${SOURCE}`,
      { sign: true, warmup: 2, idPrefix, idsOut, ...(rate ? { rate } : {}) },
      child,
    );
  } finally {
    await stopChild(child);
  }
  if (!idsOut) return { load: measured };
  return { load: measured, durability: durability(file, idsOut, "SELECT webhook_id AS id FROM deliveries") };
}

interface Durability {
  answered2xx: number;
  rows: number;
  missing: number;
  statuses: string;
}

interface LonghaulRun {
  ingest: Load;
  /** `--role api` only: the same webhooks sent at half `ingest`'s rate. */
  half: Load | null;
  durability: Durability;
}

interface Health {
  /** The busy window's /healthz load, its rate counted while the backlog lasted (`whileBusy`). */
  busy: Load & { busySeconds: number };
  idle: Load;
  backlogBefore: number;
  backlogAfter: number;
  drainS: number;
}

const DRAIN_POLL_MS = 200;

/**
 * Polls the backlog every DRAIN_POLL_MS from now on; `stop` answers the wall-clock time (epoch ms) at
 * which it was first seen empty, or null if it never was.
 */
function watchDrain(file: string): { stop: () => number | null } {
  let drainedAt: number | null = null;
  const timer = setInterval(() => {
    if (drainedAt === null && backlog(file) === 0) drainedAt = Date.now();
  }, DRAIN_POLL_MS);
  return {
    stop: () => {
      clearInterval(timer);
      return drainedAt;
    },
  };
}

/**
 * The /healthz load of the busy window, its rate counted only while the backlog lasted: the
 * 100 ms windows of its series that ended a poll's interval before the backlog was seen empty,
 * the first (begun before the load) left out. The whole window's figures when the backlog outlasted it, or when
 * it was gone too soon to leave a window.
 */
function whileBusy(r: Load, drainedAt: number | null): Load & { busySeconds: number } {
  const s = r.series;
  const whole = { ...r, busySeconds: r.requests / r.rps };
  if (!s || s.start === null || drainedAt === null) return whole;
  const busyUntil = drainedAt - DRAIN_POLL_MS;
  const counts = s.counts.slice(1).filter((_, i) => s.start! + (i + 2) * s.ms <= busyUntil);
  if (counts.length === 0) return whole;
  const busySeconds = (counts.length * s.ms) / 1000;
  const requests = counts.reduce((a, b) => a + b, 0);
  return { ...r, requests, rps: requests / busySeconds, busySeconds };
}

/** The events recorded and not yet applied: the worker's backlog (`apply_event` items). */
function backlog(file: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return (
      db.prepare("SELECT count(*) AS n FROM work_items WHERE kind = 'apply_event'").get() as { n: number }
    ).n;
  } finally {
    db.close();
  }
}

/** A fresh folder with the config every longhaul server of the bench runs with. */
function longhaulDir(): { dir: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), "longhaul-ingest-http-"));
  dirs.push(dir);
  const config = join(dir, "longhaul.config.json");
  writeFileSync(
    config,
    JSON.stringify({
      sources: { [SOURCE]: { provider: "sim", secrets: [WHSEC] } },
      // The worker parses each event with its provider; nothing is ever sent to this address.
      providers: { sim: { base_url: "http://127.0.0.1:9" } },
      // Every delivery comes from one address: the limiter would refuse most of them.
      limits: { hooks_per_min: 0 },
    }),
  );
  return { dir, config };
}

async function serve(role: "api" | "all", config: string, file: string) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const { child, output } = start(["bin/longhaul.mjs", ...serveArgs(role, config, port)], {
    LONGHAUL_DATABASE_URL: `sqlite:${file}`,
    LONGHAUL_SECRET_KEY,
    LONGHAUL_LOG_LEVEL: LOG_LEVEL,
  });
  await waitHealthy(url, child, output);
  return { url, child };
}

/** Webhook ingest on a fresh file; the file is kept (under --role api, with every event still to apply). */
async function longhaul(role: "api" | "all"): Promise<LonghaulRun & { file: string; config: string }> {
  const { dir, config } = longhaulDir();
  const file = join(dir, "l.db");
  const idsOut = join(dir, "ok-ids.txt");
  const { url, child } = await serve(role, config, file);
  try {
    const ingest = await load(
      `${url}/hooks/${SOURCE}`,
      { sign: true, warmup: 2, idsOut, idPrefix: role },
      child,
    );
    // Latency at half the most it took, on the same server (its file holds the first run's rows).
    const halfIds = join(dir, "ok-ids-half.txt");
    const half =
      role === "api"
        ? await load(
            `${url}/hooks/${SOURCE}`,
            { sign: true, warmup: 0, idsOut: halfIds, idPrefix: `${role}-half`, rate: ingest.rps / 2 },
            child,
          )
        : null;
    await stopChild(child);
    return { ingest, half, durability: durability(file, [idsOut, halfIds]), file, config };
  } finally {
    if (children.has(child)) await stopChild(child);
  }
}

/**
 * `/healthz` of `serve --role all` started on a file whose events all wait to be applied (the
 * --role api run's): first while its worker applies that backlog, then once it is gone.
 */
async function healthUnderBacklog(file: string, config: string): Promise<Health> {
  const { url, child } = await serve("all", config, file);
  try {
    const backlogBefore = backlog(file);
    const t0 = Date.now();
    const drain = watchDrain(file);
    const whole = await load(`${url}/healthz`, {
      sign: false,
      warmup: 0,
      seconds: HEALTH_SECONDS,
      series: true,
    });
    const drainedAt = drain.stop();
    const busy = whileBusy(whole, drainedAt);
    const backlogAfter = backlog(file);
    const limit = Date.now() + 300_000;
    while (backlog(file) > 0) {
      if (Date.now() > limit) throw new Error("the worker did not apply the backlog within 5 minutes");
      await sleep(50);
    }
    // When the backlog went in the busy window, the poll saw when; else the loop above did.
    const drainS = ((drainedAt ?? Date.now()) - t0) / 1000;
    const idle = await load(`${url}/healthz`, { sign: false, warmup: 0, seconds: HEALTH_SECONDS });
    return { busy, idle, backlogBefore, backlogAfter, drainS };
  } finally {
    await stopChild(child);
  }
}

/**
 * After the server has stopped: every id answered 2xx must be a row that `storedIds` reads
 * (longhaul's inbox by default).
 */
function durability(
  file: string,
  idsOut: string | string[],
  storedIds = `SELECT event_id AS id FROM inbox_events WHERE source = '${SOURCE}'`,
): Durability {
  const ids = [idsOut]
    .flat()
    .flatMap((f) => (existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean) : []));
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const stored = new Set((db.prepare(storedIds).all() as { id: string }[]).map((r) => r.id));
    const inbox =
      db.prepare("SELECT name FROM sqlite_master WHERE name = 'inbox_events'").get() !== undefined;
    const statuses = inbox
      ? (
          db
            .prepare("SELECT status, count(*) AS n FROM inbox_events GROUP BY status ORDER BY status")
            .all() as {
            status: string;
            n: number;
          }[]
        )
          .map((r) => `${r.status} ${r.n}`)
          .join(", ")
      : "";
    return {
      answered2xx: ids.length,
      rows: stored.size,
      missing: ids.filter((id) => !stored.has(id)).length,
      statuses,
    };
  } finally {
    db.close();
  }
}

async function cleanup(): Promise<void> {
  for (const child of children) child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void cleanup().finally(() => process.exit(130));
  });
}

async function main(): Promise<void> {
  if (!existsSync(join(root, "dist/cli/main.js")))
    throw new Error("Run `npm run build` first: serve runs dist/.");
  const top = (await ceiling(false)).load;
  const durableTop = await ceiling(true);
  const durableThread = await ceiling(true, { writerThread: true });
  const api = await longhaul("api");
  const halfRate = api.ingest.rps / 2;
  const durableHalf = await ceiling(true, { rate: halfRate });
  const all = await longhaul("all");
  const h = await healthUnderBacklog(api.file, api.config);

  const row = (what: string, r: Load, base: Load | null, of: string, rated = false) => ({
    what,
    "req/s": fmt(r.rps, 0),
    "p50 ms": fmt(r.p50_ms, 0),
    "p99 ms": fmt(r.p99_ms, 0),
    "non-2xx, errors": r.non2xx + r.errors + r.timeouts,
    ratio: rated ? "–" : base === null ? "1.00" : fmt(r.rps / base.rps, 2),
    of,
    "server CPU µs/req": r.cpu_us == null ? "–" : fmt(r.cpu_us, 0),
    "of it, main thread": r.main_us == null ? "–" : fmt(r.main_us, 0),
    "CPU ÷ ceiling's":
      r.cpu_us == null || top.cpu_us == null || base !== top ? "–" : fmt(r.cpu_us / top.cpu_us, 2),
    "÷ durable ceiling (req/s, CPU)":
      base !== top || r === durableTop.load || r === durableThread.load
        ? "–"
        : `${fmt(r.rps / durableTop.load.rps, 2)}, ${r.cpu_us == null || durableTop.load.cpu_us == null ? "–" : fmt(r.cpu_us / durableTop.load.cpu_us, 2)}`,
  });
  const rows = [
    row("ceiling: bare node:http, signature check only", top, null, "–"),
    row(
      "durable ceiling: the same + one SQLite row, on disk before 200 (group commit)",
      durableTop.load,
      top,
      "ceiling",
    ),
    row(
      "durable ceiling, its SQLite writer on a thread of its own (--writer-thread)",
      durableThread.load,
      top,
      "ceiling",
    ),
    row("longhaul serve --role api (verify, record, enqueue)", api.ingest, top, "ceiling"),
    row(
      `durable ceiling at ${fmt(halfRate, 0)} req/s (half the most --role api took)`,
      durableHalf.load,
      null,
      "–",
      true,
    ),
    row(`longhaul serve --role api at the same ${fmt(halfRate, 0)} req/s`, api.half!, null, "–", true),
    row("longhaul serve --role all (the same, worker applying)", all.ingest, top, "ceiling"),
    row("/healthz on --role all, idle", h.idle, null, "–"),
    row("/healthz on --role all, worker applying the backlog", h.busy, h.idle, "idle /healthz"),
  ];
  const machine = machineLine();
  const command = commandLine("bench:ingest-http", [
    "BENCH_SECONDS",
    "BENCH_CONNECTIONS",
    "BENCH_LOG_LEVEL",
    "BENCH_HEALTH_SECONDS",
  ]);
  const dur = (name: string, d: Durability) =>
    `- ${name}: ${d.answered2xx} deliveries answered 2xx, ${d.rows} rows, ${d.missing} answered 2xx without a row` +
    ` (${d.rows - d.answered2xx + d.missing} rows beyond the 2xx: requests in flight when the generator stopped)` +
    (d.statuses ? `; inbox: ${d.statuses}` : "");
  const text = [
    `${CONNECTIONS} connections, 2 s warm-up then ${SECONDS} s measured per server, loopback; each server and the load generator (autocannon) in a process of its own; /healthz windows of ${HEALTH_SECONDS} s; SQLite WAL, each write on disk before its answer; LONGHAUL_LOG_LEVEL=${LOG_LEVEL}`,
    "",
    table(rows),
    "",
    "Durability (ARCHITECTURE §3.1), checked once each server had stopped:",
    dur("durable ceiling", durableTop.durability!),
    dur("durable ceiling, writer thread", durableThread.durability!),
    dur("durable ceiling at half rate", durableHalf.durability!),
    dur("--role api (both runs)", api.durability),
    dur("--role all", all.durability),
    "",
    `At half rate: p99 ${fmt(api.half!.p99_ms, 1)} ms for --role api, ${fmt(durableHalf.load.p99_ms, 1)} ms for the durable ceiling (${fmt(api.half!.p99_ms / Math.max(durableHalf.load.p99_ms, 1), 2)}×); the goal is under 10 ms.`,
    "",
    `Backlog: --role all started on the --role api run's file with ${h.backlogBefore} events to apply; ${h.backlogAfter} were left when the busy /healthz window ended, all applied ${fmt(h.drainS, 1)} s after it began.` +
      (h.backlogAfter === 0
        ? ` The busy row's rate counts the /healthz answers of the first ${fmt(h.busy.busySeconds, 1)} s, while the backlog lasted (its latencies are the whole window's).`
        : " The backlog outlasted the busy window."),
  ].join("\n");
  recordResult("webhook ingest over HTTP", machine, command, text);
}

try {
  await main();
} finally {
  await cleanup();
}
