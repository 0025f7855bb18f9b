// Webhook → SSE latency: from a signed webhook being POSTed to a subscribed client reading the
// task event it made, beside a ceiling measured the same way in the same run.
//
// - longhaul (SQLite, API and worker in one process, as under `dev`): tasks suspended on a
//   `step.callback` that demands the Standard Webhooks signature of source `bench`; each POST
//   to a callback URL, signed like a provider's webhook, ends the step (`step.succeeded` is
//   committed and announced) and the client reads that event on `GET /v1/events`.
// - the ceiling: a bare node:http server that checks the same signature on `POST /cb/:id`,
//   answers 200 and writes an event of the same shape to every open stream.
//
// Each server runs in a process of its own. The load generator is another: it opens the
// measured SSE stream, then POSTs the callbacks open-loop at BENCH_SSE_LATENCY_RATE per second
// (default 50), each signed as it is sent, and stamps when each event arrives on the stream
// (one clock for both ends). The server notes when each event committed, which splits the
// latency into the POST's share (verify, commit) and the stream's (commit → read).
// BENCH_SSE_LATENCY_CLIENTS (default 0,100) more streams of the
// same tenant are held open by this process meanwhile, so the event also fans out to them.
// The ceiling writes every event to every stream as it comes; longhaul writes the events of
// one commit together, so with many streams and a high rate the ceiling saturates first.
import { type ChildProcess, fork } from "node:child_process";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, machineLine, table } from "./load.ts";

const CLIENTS = (process.env.BENCH_SSE_LATENCY_CLIENTS ?? "0,100").split(",").map(Number);
const CALLBACKS = Number(process.env.BENCH_SSE_LATENCY_CALLBACKS ?? 1000);
const RATE = Number(process.env.BENCH_SSE_LATENCY_RATE ?? 50);
/** Unmeasured callbacks first, at the same rate (JIT, statement caches, TCP slow start). */
const WARM = 100;
const GOAL_P99_MS = 50;
/** One secret for the run: the children get it from the environment. */
const WHSEC = process.env.BENCH_SSE_LATENCY_SECRET ?? `whsec_${randomBytes(24).toString("base64")}`;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Mode = "longhaul" | "ceiling";
interface Target {
  url: string;
  /** The ceiling's; longhaul's answer names the task its token is for. */
  taskId: string | null;
}
interface Hello {
  base: string;
  eventsPath: string;
  key: string;
  targets: Target[];
}
interface Measured {
  post: number[];
  event: number[];
  /** Per event read: its seq and when it was read, to set against when it was announced. */
  reads: [number, number][];
  failed: number;
  missed: number;
}

// ── the servers (a child process each) ──

/** Each event's seq and when it was committed (longhaul: the store's after-commit announcement; the ceiling: before its write loop). */
const announced: [number, number][] = [];

async function serveLonghaul(count: number): Promise<Hello> {
  const { pino } = await import("pino");
  const { createLonghaul } = await import("../src/app.ts");
  const { hashApiKey, newApiKey } = await import("../src/core/api-keys.ts");
  const { defineTask } = await import("../src/core/task-type.ts");
  const { SqliteStore } = await import("../src/store/sqlite/sqlite-store.ts");
  const dir = mkdtempSync(join(tmpdir(), "longhaul-bench-sse-latency-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const store = new SqliteStore({ path: join(dir, "longhaul.db") });
  await store.migrate();
  const key = newApiKey();
  const tenant = await store.createTenant({ name: "bench", keyHash: hashApiKey(key) });
  const urls: string[] = [];
  const wait = defineTask("bench.webhook", async (_input, step) =>
    step.callback("cb", { timeout: "48h", verify: { source: "bench" } }, (url) => {
      urls.push(url);
    }),
  );
  const app = await createLonghaul({
    store,
    taskTypes: [wait],
    logger: pino({ level: "silent" }),
    sources: { bench: { provider: "bench", secrets: [WHSEC] } },
    limits: { api_per_min: 0, callbacks_per_min: 0, sse_streams_per_tenant: 0 },
  });
  store.onTaskEvents((_tenant, seq) => announced.push([seq, now()]));
  const base = await app.listen({ port: 0, host: "127.0.0.1" });
  // The worker may sleep its idle interval with work due while the store fills (see
  // bench/suspended.ts); an empty enqueue every 20 ms wakes it until every task waits.
  const nudge = setInterval(() => void store.enqueue([]), 20);
  for (let i = 0; i < count; i++) {
    await store.submitTask({
      tenantId: tenant.id,
      type: "bench.webhook",
      input: { i },
      clientRequestId: null,
      userId: null,
      traceId: null,
    });
  }
  const until = Date.now() + 120_000;
  while (urls.length < count && Date.now() < until) await sleep(20);
  clearInterval(nudge);
  if (urls.length < count) throw new Error(`only ${urls.length} of ${count} tasks reached their callback`);
  const targets = urls.map((url) => ({ url: `${base}${new URL(url).pathname}`, taskId: null }));
  return { base, eventsPath: "/v1/events", key, targets };
}

/** Checks a Standard Webhooks HMAC signature the way a bare server would. */
function verified(req: http.IncomingMessage, body: Buffer, secret: Buffer): boolean {
  const id = String(req.headers["webhook-id"] ?? "");
  const ts = String(req.headers["webhook-timestamp"] ?? "");
  if (Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const expected = createHmac("sha256", secret).update(`${id}.${ts}.`).update(body).digest();
  for (const part of String(req.headers["webhook-signature"] ?? "").split(" ")) {
    const [v, sig] = part.split(",");
    if (v !== "v1" || !sig) continue;
    const got = Buffer.from(sig, "base64");
    if (got.length === expected.length && timingSafeEqual(got, expected)) return true;
  }
  return false;
}

async function serveCeiling(count: number): Promise<Hello> {
  const secret = Buffer.from(WHSEC.slice("whsec_".length), "base64");
  const open = new Set<http.ServerResponse>();
  let seq = 0;
  const server = http.createServer((req, res) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write("retry: 1000\n\n");
      open.add(res);
      req.on("close", () => open.delete(res));
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (!verified(req, body, secret)) {
        res.writeHead(401).end();
        return;
      }
      const taskId = (req.url ?? "").slice("/cb/".length);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ accepted: true, task_id: taskId, step_id: "cb" }));
      seq++;
      // The same shape as longhaul's step.succeeded frame.
      const data = JSON.stringify({
        seq,
        task_id: taskId,
        type: "step.succeeded",
        data: { step_id: "cb", output: JSON.parse(body.toString("utf8")) },
        created_at: new Date().toISOString(),
      });
      const frame = `id: ${seq}\nevent: step.succeeded\ndata: ${data}\n\n`;
      announced.push([seq, now()]);
      for (const r of open) r.write(frame);
    });
  });
  server.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const targets = Array.from({ length: count }, (_, i) => {
    const taskId = `t_${String(i).padStart(8, "0")}`;
    return { url: `${base}/cb/${taskId}`, taskId };
  });
  return { base, eventsPath: "/events", key: "none", targets };
}

// ── the load generator (a child process) ──

/** Opens one raw SSE connection; `onEvent` gets each `data:` line's task id with when it was read. */
function openStream(
  base: string,
  path: string,
  key: string,
  onEvent?: (taskId: string, seq: number, at: number) => void,
): Promise<net.Socket | null> {
  const url = new URL(base);
  return new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let head = "";
    let body = false;
    let tail = "";
    socket.setEncoding("utf8");
    socket.on("connect", () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\nAccept: text/event-stream\r\n\r\n`,
      ),
    );
    socket.on("data", (chunk: string) => {
      if (!body) {
        head += chunk;
        const end = head.indexOf("\r\n\r\n");
        if (end === -1) return;
        if (!head.startsWith("HTTP/1.1 200")) {
          socket.destroy();
          resolve(null);
          return;
        }
        body = true;
        chunk = head.slice(end + 4);
        head = "";
        resolve(socket);
      }
      if (!onEvent) return;
      const at = now();
      const text = tail + chunk;
      const lines = text.split("\n");
      tail = lines.pop() ?? "";
      for (const line of lines) {
        const i = line.indexOf('"task_id":"');
        if (!line.startsWith("data: ") || i === -1) continue;
        const from = i + '"task_id":"'.length;
        const seq = Number(/"seq":(\d+)/.exec(line)?.[1]);
        onEvent(line.slice(from, line.indexOf('"', from)), seq, at);
      }
    });
    socket.on("error", () => resolve(null));
    socket.on("close", () => resolve(null));
  });
}

async function generate(hello: Hello, mode: Mode): Promise<Measured> {
  const arrived = new Map<string, [number, number]>();
  const stream = await openStream(hello.base, hello.eventsPath, hello.key, (taskId, seq, at) => {
    if (!arrived.has(taskId)) arrived.set(taskId, [seq, at]);
  });
  if (!stream) throw new Error("the measured stream did not open");
  await sleep(200);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const key = Buffer.from(WHSEC.slice("whsec_".length), "base64");
  const sent = new Map<string, number>();
  const post: number[] = [];
  let failed = 0;
  const send = (t: Target, i: number) =>
    new Promise<void>((resolve) => {
      const body = JSON.stringify({ n: i, ok: true });
      const id = `msg_${mode}_${i}`;
      const ts = String(Math.floor(Date.now() / 1000));
      const signature = createHmac("sha256", key).update(`${id}.${ts}.`).update(body).digest("base64");
      const at = now();
      const req = http.request(
        t.url,
        {
          method: "POST",
          agent,
          headers: {
            "content-type": "application/json",
            "webhook-id": id,
            "webhook-timestamp": ts,
            "webhook-signature": `v1,${signature}`,
          },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => {
            text += c;
          });
          res.on("end", () => {
            if (res.statusCode === 200) {
              // longhaul's answer names the task the token is for.
              const answered = t.taskId ?? (JSON.parse(text) as { task_id: string }).task_id;
              if (i >= WARM) {
                sent.set(answered, at);
                post.push(now() - at);
              }
            } else failed++;
            resolve();
          });
        },
      );
      req.on("error", () => {
        failed++;
        resolve();
      });
      req.end(body);
    });
  // Open loop: each POST leaves at its time whether or not earlier ones were answered.
  const started = now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < hello.targets.length; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - now();
    if (wait > 0) await sleep(wait);
    inFlight.push(send(hello.targets[i]!, i));
  }
  await Promise.all(inFlight);
  const until = Date.now() + 10_000;
  while (Date.now() < until && [...sent.keys()].some((t) => !arrived.has(t))) await sleep(20);
  const event: number[] = [];
  const reads: [number, number][] = [];
  let missed = 0;
  for (const [taskId, at] of sent) {
    const got = arrived.get(taskId);
    if (got === undefined) missed++;
    else {
      event.push(got[1] - at);
      reads.push(got);
    }
  }
  stream.destroy();
  agent.destroy();
  return { post, event, reads, failed, missed };
}

// ── the orchestrator (this process) ──

function child(args: string[]): ChildProcess {
  return fork(fileURLToPath(import.meta.url), args, {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, BENCH_SSE_LATENCY_SECRET: WHSEC },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
}

const message = <T>(c: ChildProcess): Promise<T> =>
  new Promise((resolve, reject) => {
    c.once("message", (m) => resolve(m as T));
    c.once("exit", (code) => reject(new Error(`child exited with ${code} before answering`)));
  });

async function stop(c: ChildProcess): Promise<void> {
  if (c.exitCode !== null) return;
  const exited = new Promise((r) => c.once("exit", r));
  c.kill("SIGTERM");
  await exited;
}

async function run(mode: Mode, clients: number): Promise<Measured & { commitToEvent: number[] }> {
  const server = child(["--serve", mode]);
  try {
    const hello = await message<Hello>(server);
    const extra: net.Socket[] = [];
    for (let i = 0; i < clients; i += 500) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(500, clients - i) }, () =>
          openStream(hello.base, hello.eventsPath, hello.key),
        ),
      );
      for (const s of batch) if (s) extra.push(s);
    }
    if (extra.length < clients) throw new Error(`only ${extra.length} of ${clients} streams opened`);
    const generator = child(["--load", mode]);
    try {
      const result = message<Measured>(generator);
      generator.send(hello);
      const r = await result;
      const commits = message<[number, number][]>(server);
      server.send("announced");
      const at = new Map(await commits);
      const commitToEvent = r.reads.flatMap(([seq, read]) => {
        const c = at.get(seq);
        return c === undefined ? [] : [read - c];
      });
      return { ...r, commitToEvent };
    } finally {
      await stop(generator);
      for (const s of extra) s.destroy();
    }
  } finally {
    await stop(server);
  }
}

async function main(): Promise<void> {
  const rows: Record<string, string | number>[] = [];
  const at = (xs: number[], q: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
  };
  for (const n of CLIENTS) {
    const ceiling = await run("ceiling", n);
    const longhaul = await run("longhaul", n);
    for (const [mode, r] of [
      ["ceiling", ceiling],
      ["longhaul", longhaul],
    ] as const) {
      const vs = (q: number) => (mode === "ceiling" ? "1.00" : fmt(at(r.event, q) / at(ceiling.event, q), 2));
      rows.push({
        "other streams": n,
        case:
          mode === "ceiling"
            ? "ceiling: bare node:http, verify + broadcast"
            : "longhaul: signed callback → step.succeeded on GET /v1/events",
        measured: r.event.length,
        "failed POSTs": r.failed,
        "events missed": r.missed,
        "POST→200 p50 ms": fmt(at(r.post, 0.5)),
        "POST→200 p99 ms": fmt(at(r.post, 0.99)),
        "POST→event p50 ms": fmt(at(r.event, 0.5)),
        "POST→event p99 ms": fmt(at(r.event, 0.99)),
        "POST→event max ms": fmt(at(r.event, 1)),
        "commit→event p50 ms": fmt(at(r.commitToEvent, 0.5)),
        "commit→event p99 ms": fmt(at(r.commitToEvent, 0.99)),
        "p50 vs ceiling": vs(0.5),
        "p99 vs ceiling": vs(0.99),
        [`p99 < ${GOAL_P99_MS} ms`]: at(r.event, 0.99) < GOAL_P99_MS ? "yes" : "no",
      });
    }
  }
  console.log(
    `\n${CALLBACKS} signed POSTs per case at ${RATE}/s open loop (the first ${WARM} not measured); the measured client and the load generator share a process, each server has its own; ${machineLine()}\n`,
  );
  console.log(table(rows));
}

const serveAt = process.argv.indexOf("--serve");
const loadAt = process.argv.indexOf("--load");
if (serveAt !== -1) {
  const mode = process.argv[serveAt + 1] as Mode;
  const count = WARM + CALLBACKS;
  const hello = mode === "longhaul" ? await serveLonghaul(count) : await serveCeiling(count);
  process.on("message", () => process.send?.(announced));
  process.send?.(hello);
} else if (loadAt !== -1) {
  const mode = process.argv[loadAt + 1] as Mode;
  process.once("message", async (hello: Hello) => {
    process.send?.(await generate(hello, mode));
  });
} else {
  await main();
}
