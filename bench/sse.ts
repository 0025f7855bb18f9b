// SSE fan-out: N raw connections on GET /v1/events of one longhaul server (SQLite), beside a
// ceiling in the same run: the same N connections on a plain node:http server that writes each
// event to every response itself. Each server runs in its own child process (with --expose-gc)
// so its memory per connected client is measured alone; the clients live in this process.
// Latency is from the event's commit (the store's after-commit announcement; for the ceiling,
// the moment before its write loop) to each client reading the event's `id:` line. With
// thousands of clients in one process that latency is bounded by how fast this process reads,
// so the servers' own CPU time per event is measured too: the cost of the fan-out itself.
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { fmt, table } from "./load.ts";

const CLIENTS = (process.env.BENCH_SSE_CLIENTS ?? "1000,5000,10000").split(",").map(Number);
const EVENTS = Number(process.env.BENCH_SSE_EVENTS ?? 20);
const SPACING_MS = Number(process.env.BENCH_SSE_SPACING_MS ?? 250);
const CONNECT_BATCH = 500;
const now = () => performance.timeOrigin + performance.now();

type Mode = "longhaul" | "ceiling";
type Reply =
  | { url: string; key: string }
  | { rss: number; heap: number }
  | { streams: number }
  | { commits: [number, number][]; cpuMs: number; busyMs: number };

// ── the server side (child process) ──

async function serveLonghaul(): Promise<{
  url: string;
  key: string;
  streams: () => number;
  emit: (n: number) => Promise<[number, number][]>;
}> {
  const { pino } = await import("pino");
  const { createLonghaul } = await import("../src/app.ts");
  const { hashApiKey, newApiKey } = await import("../src/core/api-keys.ts");
  const { SqliteStore } = await import("../src/store/sqlite/sqlite-store.ts");
  const dir = mkdtempSync(join(tmpdir(), "longhaul-bench-sse-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const store = new SqliteStore({ path: join(dir, "longhaul.db") });
  await store.migrate();
  const key = newApiKey();
  const tenant = await store.createTenant({ name: "bench", keyHash: hashApiKey(key) });
  // Thousands of streams of one tenant, opened at once: far past the default caps.
  const app = await createLonghaul({
    store,
    role: "api",
    logger: pino({ level: "silent" }),
    limits: { api_per_min: 0, sse_streams_per_tenant: 0 },
  });
  const url = await app.listen({ port: 0 });
  const commits: [number, number][] = [];
  store.onTaskEvents((_tenant, seq) => commits.push([seq, now()]));
  return {
    url,
    key,
    streams: () => app.server.eventStreams.stats().streams,
    async emit(n) {
      commits.length = 0;
      for (let i = 0; i < n; i++) {
        await store.submitTask({
          tenantId: tenant.id,
          type: "bench.noop",
          input: { i },
          clientRequestId: null,
          userId: null,
          traceId: null,
        });
        await new Promise((r) => setTimeout(r, SPACING_MS));
      }
      return [...commits];
    },
  };
}

async function serveCeiling(): Promise<{
  url: string;
  key: string;
  streams: () => number;
  emit: (n: number) => Promise<[number, number][]>;
}> {
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write("retry: 1000\n\n");
    open.add(res);
    req.on("close", () => open.delete(res));
  });
  server.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const port = (server.address() as net.AddressInfo).port;
  let seq = 0;
  return {
    url: `http://127.0.0.1:${port}`,
    key: "none",
    streams: () => open.size,
    async emit(n) {
      const commits: [number, number][] = [];
      for (let i = 0; i < n; i++) {
        seq++;
        // The same shape and size as a longhaul task.created frame.
        const data = JSON.stringify({
          seq,
          task_id: "t_01KBENCHBENCHBENCHBENCHBEN",
          type: "task.created",
          data: { type: "bench.noop" },
          created_at: new Date().toISOString(),
        });
        const frame = `id: ${seq}\nevent: task.created\ndata: ${data}\n\n`;
        commits.push([seq, now()]);
        for (const res of open) res.write(frame);
        await new Promise((r) => setTimeout(r, SPACING_MS));
      }
      return commits;
    },
  };
}

async function childMain(mode: Mode): Promise<void> {
  const s = mode === "longhaul" ? await serveLonghaul() : await serveCeiling();
  const send = (m: Reply) => process.send?.(m);
  const gc = (globalThis as { gc?: () => void }).gc;
  process.on("message", async (m: { op: string; n?: number }) => {
    if (m.op === "mem") {
      for (let i = 0; i < 4; i++) {
        gc?.();
        await new Promise((r) => setImmediate(r));
      }
      const u = process.memoryUsage();
      send({ rss: u.rss, heap: u.heapUsed });
    } else if (m.op === "streams") send({ streams: s.streams() });
    else if (m.op === "emit") {
      // The server's own cost of the events: CPU time (user + system, so the socket writes
      // count) and event-loop busy time, from the first event until the last is written.
      const cpu = process.cpuUsage();
      const elu = performance.eventLoopUtilization();
      const commits = await s.emit(m.n ?? 1);
      const used = process.cpuUsage(cpu);
      send({
        commits,
        cpuMs: (used.user + used.system) / 1000,
        busyMs: performance.eventLoopUtilization(elu).active,
      });
    } else if (m.op === "exit") process.exit(0);
  });
  send({ url: s.url, key: s.key });
}

// ── the client side (this process) ──

class Server {
  private waiting: ((m: Reply) => void) | null = null;
  private constructor(private readonly child: ChildProcess) {
    child.on("message", (m: Reply) => {
      const w = this.waiting;
      this.waiting = null;
      w?.(m);
    });
  }
  static async start(mode: Mode): Promise<{ server: Server; url: string; key: string }> {
    const child = fork(fileURLToPath(import.meta.url), ["--serve", mode], {
      execArgv: ["--import", "tsx", "--expose-gc"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const server = new Server(child);
    const hello = (await server.next()) as { url: string; key: string };
    return { server, ...hello };
  }
  next(): Promise<Reply> {
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }
  ask<T extends Reply>(op: string, n?: number): Promise<T> {
    const p = this.next() as Promise<T>;
    this.child.send({ op, n });
    return p;
  }
  async stop(): Promise<void> {
    const exited = new Promise((r) => this.child.once("exit", r));
    this.child.send({ op: "exit" });
    await exited;
  }
}

interface Client {
  socket: net.Socket;
  lastSeq: number;
}

/** One raw connection that reads only the `id:` lines of the stream and stamps when each arrives. */
function connect(url: URL, key: string, received: Map<number, number[]>): Promise<Client | null> {
  return new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname);
    const client: Client = { socket, lastSeq: 0 };
    let head = "";
    let body = false;
    let tail = "";
    const idLine = /(?:^|\n)id: (\d+)\n/g;
    socket.setEncoding("utf8");
    socket.on("connect", () =>
      socket.write(
        `GET /v1/events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\nAccept: text/event-stream\r\n\r\n`,
      ),
    );
    socket.on("data", (chunk: string) => {
      const at = now();
      let text = chunk;
      if (!body) {
        head += chunk;
        const end = head.indexOf("\r\n\r\n");
        if (end === -1) return;
        if (!head.startsWith("HTTP/1.1 200")) {
          socket.destroy();
          return resolve(null);
        }
        body = true;
        text = head.slice(end + 4);
        head = "";
        resolve(client);
      }
      text = tail + text;
      idLine.lastIndex = 0;
      for (let m = idLine.exec(text); m; m = idLine.exec(text)) {
        const seq = Number(m[1]);
        if (seq <= client.lastSeq) continue;
        client.lastSeq = seq;
        let times = received.get(seq);
        if (!times) {
          times = [];
          received.set(seq, times);
        }
        times.push(at);
      }
      tail = text.slice(-32);
    });
    socket.on("error", () => resolve(null));
    socket.on("close", () => resolve(null));
  });
}

interface Result {
  mode: Mode;
  clients: number;
  connected: number;
  rssPerClientKb: number;
  heapPerClientKb: number;
  p50: number;
  p99: number;
  max: number;
  missed: number;
  cpuMsPerEvent: number;
  busyMsPerEvent: number;
}

async function run(mode: Mode, n: number): Promise<Result> {
  const { server, url, key } = await Server.start(mode);
  const target = new URL(url);
  const received = new Map<number, number[]>();
  const before = await server.ask<{ rss: number; heap: number }>("mem");
  const clients: Client[] = [];
  for (let i = 0; i < n; i += CONNECT_BATCH) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(CONNECT_BATCH, n - i) }, () => connect(target, key, received)),
    );
    for (const c of batch) if (c) clients.push(c);
  }
  const deadline = Date.now() + 30_000;
  while (
    (await server.ask<{ streams: number }>("streams")).streams < clients.length &&
    Date.now() < deadline
  ) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const afterConnect = await server.ask<{ rss: number; heap: number }>("mem");
  const { commits, cpuMs, busyMs } = await server.ask<{
    commits: [number, number][];
    cpuMs: number;
    busyMs: number;
  }>("emit", EVENTS);
  const lastSeq = commits.at(-1)?.[0] ?? 0;
  const drainUntil = Date.now() + 10_000;
  while (Date.now() < drainUntil && (received.get(lastSeq)?.length ?? 0) < clients.length) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const latencies: number[] = [];
  let missed = 0;
  for (const [seq, committedAt] of commits) {
    const times = received.get(seq) ?? [];
    missed += clients.length - times.length;
    for (const t of times) latencies.push(t - committedAt);
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  for (const c of clients) c.socket.destroy();
  await server.stop();
  const per = (a: number, b: number) => (clients.length === 0 ? Number.NaN : (a - b) / clients.length / 1024);
  return {
    mode,
    clients: n,
    connected: clients.length,
    rssPerClientKb: per(afterConnect.rss, before.rss),
    heapPerClientKb: per(afterConnect.heap, before.heap),
    p50: at(0.5),
    p99: at(0.99),
    max: latencies.at(-1) ?? Number.NaN,
    missed,
    cpuMsPerEvent: cpuMs / EVENTS,
    busyMsPerEvent: busyMs / EVENTS,
  };
}

async function main(): Promise<void> {
  const rows: Record<string, string | number>[] = [];
  for (const n of CLIENTS) {
    const ceiling = await run("ceiling", n);
    const longhaul = await run("longhaul", n);
    for (const r of [ceiling, longhaul]) {
      const vs = (a: number, b: number) => (r === ceiling ? "1.00" : fmt(a / b, 2));
      rows.push({
        clients: n,
        case: r.mode === "ceiling" ? "ceiling: plain node:http broadcast" : "longhaul GET /v1/events",
        connected: r.connected,
        "RSS KB/client": fmt(r.rssPerClientKb),
        "heap KB/client": fmt(r.heapPerClientKb),
        "p50 ms": fmt(r.p50),
        "p99 ms": fmt(r.p99),
        "max ms": fmt(r.max),
        missed: r.missed,
        "server CPU ms/event": fmt(r.cpuMsPerEvent, 2),
        "server busy ms/event": fmt(r.busyMsPerEvent, 2),
        "CPU vs ceiling": vs(r.cpuMsPerEvent, ceiling.cpuMsPerEvent),
        "RSS vs ceiling": vs(r.rssPerClientKb, ceiling.rssPerClientKb),
        "p99 vs ceiling": vs(r.p99, ceiling.p99),
      });
    }
  }
  console.log(
    `\n${EVENTS} events ${SPACING_MS} ms apart per run; raw loopback connections; memory after GC in the server's own process; latency from commit to the client reading the event; server CPU (user + system) and event-loop busy time per event in the server's process while the events go out (longhaul's include committing the event)\n`,
  );
  console.log(table(rows));
}

const serveAt = process.argv.indexOf("--serve");
if (serveAt !== -1) await childMain(process.argv[serveAt + 1] as Mode);
else await main();
