// Raw file upload (`POST /v1/files`, application/octet-stream), each side in a process of its own:
//
// 1. the ceiling: bench/ceiling/upload-disk.mjs, a bare node:http server that streams the body to
//    a file, fsyncs it at the end and answers 201: what streaming to disk costs on the machine;
// 2. longhaul: this file run with `--serve`, a child that starts `createLonghaul` on a fresh
//    SQLite file with its blobs in a temporary folder and one API key (`limits.file_max_bytes` 0):
//    the body streamed to a temporary file, hashed (SHA-256), fsynced, renamed, then its row.
//
// The body comes from bench/upload-client.mjs, in its own process: BENCH_UPLOAD_MIB (default
// 1024) MiB generated as it is sent, one 1 MiB random buffer repeated. BENCH_RUNS (default 3)
// rounds, the two servers alternating within each. Per upload: MB/s (10^6 bytes per second, from
// the first byte sent to the answer), and the server's RSS growth over it (VmRSS from /proc,
// sampled every 20 ms, its peak less its value before the upload). Every temporary folder is
// removed at the end. The table goes to stdout and is appended to bench/RESULTS.md.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { children, exited, startChild, stopChild } from "./children.ts";
import { commandLine, fmt, machineLine, recordResult, table } from "./load.ts";

const MIB = Number(process.env.BENCH_UPLOAD_MIB ?? 1024);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BYTES = MIB * 1024 * 1024;
const root = fileURLToPath(new URL("..", import.meta.url));
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The server child: longhaul with a fresh SQLite file and blob folder under `dir`; prints `{ url, key }`. */
async function serveLonghaul(dir: string): Promise<void> {
  const { pino } = await import("pino");
  const { createLonghaul } = await import("../src/app.ts");
  const { hashApiKey, newApiKey } = await import("../src/core/api-keys.ts");
  const { SqliteStore } = await import("../src/store/sqlite/sqlite-store.ts");
  const store = new SqliteStore({ path: join(dir, "longhaul.db") });
  await store.migrate();
  const key = newApiKey();
  await store.createTenant({ name: "bench", keyHash: hashApiKey(key) });
  const app = await createLonghaul({
    store,
    blobDir: join(dir, "blobs"),
    logger: pino({ level: "silent" }),
    limits: { api_per_min: 0, file_max_bytes: 0 },
    httpTimeouts: { requestMs: 3_600_000 },
  });
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  console.log(JSON.stringify({ url, key }));
}

const dirs: string[] = [];

const start = (args: string[]) => startChild(root, args);

async function firstLine(output: () => string, child: ChildProcess): Promise<Record<string, string>> {
  const deadline = Date.now() + 30_000;
  while (!output().includes("\n") && Date.now() < deadline && child.exitCode === null) await sleep(20);
  const line = output().split("\n")[0] ?? "";
  if (!line.startsWith("{")) throw new Error(`the server did not start:\n${output()}`);
  return JSON.parse(line) as Record<string, string>;
}

/** VmRSS of a process in bytes, or null. */
function rss(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

interface Upload {
  mbps: number;
  rssGrowth: number | null;
  status: number;
}

/** One upload to `url` (its server `child`), the server's RSS sampled throughout. */
async function upload(url: string, key: string | undefined, child: ChildProcess): Promise<Upload> {
  const pid = child.pid!;
  const before = rss(pid);
  let peak = before ?? 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, rss(pid) ?? 0);
  }, 20);
  const args = [here("./upload-client.mjs"), "--url", url, "--bytes", String(BYTES)];
  if (key) args.push("--key", key);
  const client = start(args);
  const code = await exited(client.child);
  clearInterval(timer);
  peak = Math.max(peak, rss(pid) ?? 0);
  const last = client.output().trim().split("\n").at(-1) ?? "";
  if (code !== 0 || !last.startsWith("{"))
    throw new Error(`the upload failed (${code}):\n${client.output()}`);
  const r = JSON.parse(last) as { status: number; seconds: number; body: string };
  if (r.status !== 201) throw new Error(`the upload answered ${r.status}: ${r.body}`);
  return {
    mbps: BYTES / 1e6 / r.seconds,
    rssGrowth: before === null ? null : peak - before,
    status: r.status,
  };
}

async function round(kind: "longhaul" | "ceiling"): Promise<Upload> {
  const dir = mkdtempSync(join(tmpdir(), `longhaul-bench-upload-${kind}-`));
  dirs.push(dir);
  const { child, output } =
    kind === "ceiling"
      ? start([here("./ceiling/upload-disk.mjs"), "--dir", dir])
      : start(["--import", "tsx", here("./upload.ts"), "--serve", dir]);
  try {
    const hello = await firstLine(output, child);
    const url = kind === "ceiling" ? hello.url! : `${hello.url}/v1/files`;
    return await upload(url, hello.key, child);
  } finally {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

function cleanup(): void {
  for (const child of children) child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
};
const mib = (b: number | null) => (b === null ? "–" : fmt(b / 1048576, 1));

async function main(): Promise<void> {
  const runs: Record<"longhaul" | "ceiling", Upload[]> = { longhaul: [], ceiling: [] };
  for (let i = 0; i < RUNS; i++) {
    const order = i % 2 === 0 ? (["ceiling", "longhaul"] as const) : (["longhaul", "ceiling"] as const);
    for (const kind of order) {
      const r = await round(kind);
      runs[kind].push(r);
      console.error(`round ${i + 1} ${kind}: ${fmt(r.mbps, 0)} MB/s, RSS +${mib(r.rssGrowth)} MiB`);
    }
  }
  const top = median(runs.ceiling.map((r) => r.mbps));
  const row = (what: string, rs: Upload[]) => {
    const m = median(rs.map((r) => r.mbps));
    const growth = rs.map((r) => r.rssGrowth ?? 0);
    return {
      what,
      "MB/s (median)": fmt(m, 0),
      rounds: rs.map((r) => fmt(r.mbps, 0)).join(", "),
      "vs ceiling": fmt(m / top, 2),
      "server RSS growth MiB (max)": mib(Math.max(...growth)),
      "RSS rounds": rs.map((r) => mib(r.rssGrowth)).join(", "),
    };
  };
  const rows = [
    row("ceiling: bare node:http, body streamed to a file, fsync", runs.ceiling),
    row("longhaul POST /v1/files (raw; SHA-256, fsync, rename, SQLite row)", runs.longhaul),
  ];
  const ratio = median(runs.longhaul.map((r) => r.mbps)) / top;
  const maxRss = Math.max(...runs.longhaul.map((r) => r.rssGrowth ?? 0));
  const text = [
    `one ${MIB} MiB raw application/octet-stream body per upload (a 1 MiB random buffer repeated), loopback; each server and the client in a process of its own; ${RUNS} rounds, the servers alternating; MB/s = 10^6 bytes/s, first byte sent to the answer; RSS growth = peak VmRSS during the upload less before it`,
    "",
    table(rows),
    "",
    `longhaul/ceiling ${fmt(ratio, 2)} (goal ≥ 0.7); longhaul's RSS growth at most ${mib(maxRss)} MiB (goal < 64 MiB).`,
  ].join("\n");
  recordResult(
    "raw file upload",
    machineLine(),
    commandLine("bench:upload", ["BENCH_UPLOAD_MIB", "BENCH_RUNS"]),
    text,
  );
}

const serveAt = process.argv.indexOf("--serve");
if (serveAt >= 0) {
  await serveLonghaul(process.argv[serveAt + 1]!);
} else {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      cleanup();
      process.exit(130);
    });
  }
  try {
    await main();
  } finally {
    cleanup();
  }
}
