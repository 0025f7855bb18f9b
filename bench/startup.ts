// Startup: the time from spawning `longhaul serve` to its first 200 on `GET /healthz`, against
// the goal "answers /healthz < 500 ms after start, no transpiling at runtime". Measured in one
// run, each series started BENCH_RUNS times (default 10), one process at a time:
//
// 1. the ceiling: a bare `node -e` process whose node:http server answers /healthz, nothing else;
// 2. `node bin/longhaul.mjs serve --role api` (the compiled CLI: run `npm run build` first) on a
//    fresh SQLite file per run, so every start opens a new database and migrates it;
// 3. the same with `--role all` (API and worker in one process, the default role);
// 4. `--role all` on a fresh PostgreSQL schema per run (dropped after it), when a PostgreSQL on
//    loopback answers: LONGHAUL_BENCH_POSTGRES_URL, else BENCH_POSTGRES_URL, else
//    LONGHAUL_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test;
// 5. `node --import tsx src/cli/main.ts serve --role api` on a fresh SQLite file: what
//    transpiling the sources at runtime would cost, with tsx's cache as it is (warm after the
//    warm-up round), and once more with TSX_DISABLE_CACHE=1 (every file transpiled each start).
//
// The clock starts just before spawn() and stops when the status line of the first 200 arrives.
// /healthz is polled every 5 ms (BENCH_POLL_MS), each attempt a new connection given 50 ms to
// connect; a refused connection fails at once on loopback. Rounds are interleaved, the order
// rotating by one series per round, after one unrecorded warm-up round (page cache, tsx cache).
// Each server is stopped with SIGTERM (SIGKILL after 10 s) before the next one starts. Servers run
// with LONGHAUL_LOG_LEVEL=warn (BENCH_LOG_LEVEL), since the ceiling writes no log line either.
//
// The table goes to stdout and is appended to bench/RESULTS.md with the machine and the command.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { freePort, serveArgs, stopChild } from "./children.ts";
import { commandLine, fmt, machineLine, recordResult } from "./load.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 5);
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? "warn";
const CONNECT_TIMEOUT_MS = 50;
const START_TIMEOUT_MS = 30_000;
const TARGET_MS = 500;
const PG_URL_SET = process.env.LONGHAUL_BENCH_POSTGRES_URL ?? process.env.BENCH_POSTGRES_URL;
const PG_URL =
  PG_URL_SET ?? process.env.LONGHAUL_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const root = fileURLToPath(new URL("..", import.meta.url));
const _here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The ceiling: node:http answering /healthz as longhaul does, without a store behind it. */
const CEILING = `require("node:http").createServer((req, res) => {
  if (req.url === "/healthz") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"status":"ok","store":"ok"}');
  } else {
    res.writeHead(404);
    res.end();
  }
}).listen(Number(process.env.BENCH_PORT), "127.0.0.1");`;

interface Series {
  what: string;
  /** The node arguments and environment of one start listening on `port`; `after` cleans up. */
  prepare(
    port: number,
    run: string,
  ): Promise<{ args: string[]; env: NodeJS.ProcessEnv; after?: () => Promise<void> }>;
  times: number[];
}

const children = new Set<ChildProcess>();
let scratch: string | undefined;
let admin: pg.Pool | undefined;
const schemas = new Set<string>();

/** One GET /healthz on a new connection: its status and when its status line arrived, or null. */
function probe(port: number): Promise<{ status: number; at: number } | null> {
  return new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: "/healthz", agent: false });
    const connect = setTimeout(() => req.destroy(), CONNECT_TIMEOUT_MS);
    req.once("socket", (socket) => socket.once("connect", () => clearTimeout(connect)));
    // Connected, the server answers once its event loop is free: give it the whole start's time.
    req.setTimeout(START_TIMEOUT_MS, () => req.destroy());
    req.once("response", (res) => {
      const at = performance.now();
      clearTimeout(connect);
      res.resume();
      resolve({ status: res.statusCode ?? 0, at });
    });
    req.once("error", () => {
      clearTimeout(connect);
      resolve(null);
    });
    req.end();
  });
}

/** Spawns one start and returns the milliseconds from spawn() to the first 200 of /healthz. */
async function once(series: Series, run: string): Promise<number> {
  const port = await freePort();
  const { args, env, after } = await series.prepare(port, run);
  let out = "";
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  child.on("exit", () => children.delete(child));
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-8192);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(
          `${series.what} exited (${child.exitCode ?? child.signalCode}) before answering:\n${out}`,
        );
      if (performance.now() - t0 > START_TIMEOUT_MS)
        throw new Error(
          `${series.what} did not answer /healthz within ${START_TIMEOUT_MS / 1000} s:\n${out}`,
        );
      const attempt = performance.now();
      const r = await probe(port);
      if (r?.status === 200) return r.at - t0;
      const wait = POLL_MS - (performance.now() - attempt);
      if (wait > 0) await sleep(wait);
    }
  } finally {
    await stopChild(child);
    await after?.();
  }
}

/** A fresh SQLite file and config for one start. */
function sqlite(run: string): { config: string; env: NodeJS.ProcessEnv; after: () => Promise<void> } {
  const dir = join(scratch!, run);
  mkdirSync(dir, { recursive: true });
  const config = join(dir, "longhaul.config.json");
  writeFileSync(config, "{}\n");
  return {
    config,
    env: {
      LONGHAUL_DATABASE_URL: `sqlite:${join(dir, "l.db")}`,
      LONGHAUL_SECRET_KEY: randomBytes(32).toString("base64"),
      LONGHAUL_LOG_LEVEL: LOG_LEVEL,
    },
    after: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

function compiled(role: "api" | "all"): Series {
  return {
    what: `longhaul serve --role ${role}, SQLite (bin/longhaul.mjs, compiled)`,
    times: [],
    async prepare(port, run) {
      const s = sqlite(run);
      return { args: ["bin/longhaul.mjs", ...serveArgs(role, s.config, port)], env: s.env, after: s.after };
    },
  };
}

function transpiled(cache: boolean): Series {
  return {
    what: `longhaul serve --role api, SQLite (node --import tsx src/cli/main.ts, ${cache ? "tsx cache" : "TSX_DISABLE_CACHE=1"})`,
    times: [],
    async prepare(port, run) {
      const s = sqlite(run);
      return {
        args: ["--import", "tsx", "src/cli/main.ts", ...serveArgs("api", s.config, port)],
        env: { ...s.env, ...(cache ? {} : { TSX_DISABLE_CACHE: "1" }) },
        after: s.after,
      };
    },
  };
}

function postgres(role: "api" | "all"): Series {
  return {
    what: `longhaul serve --role ${role}, PostgreSQL (bin/longhaul.mjs, compiled)`,
    times: [],
    async prepare(port, run) {
      const s = sqlite(run);
      const schema = `bench_startup_${process.pid}_${run.replace(/\W/g, "_")}`;
      schemas.add(schema);
      const url = new URL(PG_URL);
      url.searchParams.set("schema", schema);
      return {
        args: ["bin/longhaul.mjs", ...serveArgs(role, s.config, port)],
        env: { ...s.env, LONGHAUL_DATABASE_URL: url.toString() },
        after: async () => {
          await s.after();
          await admin!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          schemas.delete(schema);
        },
      };
    },
  };
}

/** Whether the PostgreSQL to start on answers; why not, otherwise. */
async function postgresReachable(): Promise<string | null> {
  const host = new URL(PG_URL).hostname;
  if (!["127.0.0.1", "localhost", "[::1]"].includes(host))
    return `PostgreSQL skipped: this bench only uses one on loopback, not ${host}.`;
  const pool = new pg.Pool({ connectionString: PG_URL, max: 1, connectionTimeoutMillis: 2000 });
  pool.on("error", () => {});
  try {
    await pool.query("SELECT 1");
    admin = pool;
    return null;
  } catch (err) {
    await pool.end().catch(() => {});
    return `PostgreSQL skipped: ${new URL(PG_URL).host} did not answer (${(err as Error).message}).`;
  }
}

let cleaned: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaned ??= (async () => {
    for (const child of children) child.kill("SIGKILL");
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    for (const schema of schemas)
      await admin?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await admin?.end().catch(() => {});
  })();
  return cleaned;
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void cleanup().finally(() => process.exit(130));
  });
}

/** Nearest rank: the smallest time with at least q of the runs at or under it. */
const quantile = (sorted: number[], q: number) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
function median(sorted: number[]): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A markdown table with its columns padded, as the other entries of bench/RESULTS.md. */
function aligned(rows: Record<string, string>[]): string {
  const cols = Object.keys(rows[0] ?? {});
  const width = cols.map((c) => Math.max(c.length, 3, ...rows.map((r) => (r[c] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(width[i]!)).join(" | ")} |`;
  return [
    line(cols),
    line(width.map((w) => "-".repeat(w))),
    ...rows.map((r) => line(cols.map((c) => r[c] ?? ""))),
  ].join("\n");
}

async function main(): Promise<void> {
  if (!existsSync(join(root, "dist/cli/main.js")))
    throw new Error("Run `npm run build` first: bin/longhaul.mjs runs dist/.");
  if (!(RUNS >= 1)) throw new Error(`BENCH_RUNS must be at least 1, not ${process.env.BENCH_RUNS}.`);
  scratch = mkdtempSync(join(tmpdir(), "longhaul-startup-"));
  const skipped = await postgresReachable();
  if (skipped && PG_URL_SET) throw new Error(skipped);

  const ceiling: Series = {
    what: "ceiling: bare node:http in node -e",
    times: [],
    async prepare(port) {
      return { args: ["-e", CEILING], env: { BENCH_PORT: String(port) } };
    },
  };
  const series = [
    ceiling,
    compiled("api"),
    compiled("all"),
    ...(skipped ? [] : [postgres("all")]),
    transpiled(true),
    transpiled(false),
  ];

  for (let round = 0; round <= RUNS; round++) {
    // Round 0 warms the page cache and tsx's cache and is not recorded.
    for (let k = 0; k < series.length; k++) {
      const s = series[(k + round) % series.length]!;
      const ms = await once(s, `r${round}-${k}`);
      if (round > 0) s.times.push(ms);
    }
    process.stdout.write(round === 0 ? "warm-up round done\n" : `round ${round}/${RUNS} done\n`);
  }

  const base = median([...ceiling.times].sort((a, b) => a - b));
  const rows = series.map((s) => {
    const sorted = [...s.times].sort((a, b) => a - b);
    return {
      what: s.what,
      "min ms": fmt(sorted[0]!, 0),
      "median ms": fmt(median(sorted), 0),
      "p90 ms": fmt(quantile(sorted, 0.9), 0),
      "median ÷ ceiling": s === ceiling ? "1.0" : fmt(median(sorted) / base, 1),
      [`< ${TARGET_MS} ms`]: `${sorted.filter((t) => t < TARGET_MS).length}/${sorted.length}`,
    };
  });

  const machine = machineLine();
  const command = commandLine("bench:startup", [
    "BENCH_RUNS",
    "BENCH_POLL_MS",
    "BENCH_LOG_LEVEL",
    "LONGHAUL_BENCH_POSTGRES_URL",
    "BENCH_POSTGRES_URL",
  ]);
  const text = [
    `Spawn to the first 200 of GET /healthz, ${RUNS} runs per series after a warm-up round, rounds interleaved; /healthz polled every ${POLL_MS} ms on new loopback connections (a time is up to ${POLL_MS} ms late); a fresh SQLite file (or PostgreSQL schema) per run, migrated by the start; LONGHAUL_LOG_LEVEL=${LOG_LEVEL}`,
    "",
    aligned(rows),
    ...(skipped ? ["", skipped] : []),
  ].join("\n");
  recordResult("startup: serve to the first /healthz 200", machine, command, text);
}

try {
  await main();
} finally {
  await cleanup();
}
