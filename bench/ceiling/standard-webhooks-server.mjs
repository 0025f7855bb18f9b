// The ceiling of the webhook-ingest bench (bench/ingest-http.ts): a bare node:http server that
// does only what ingress must do before it records anything, and nothing else. It reads the
// body (refusing more than 1 MiB, ingress's default limit), checks a Standard Webhooks
// signature (HMAC-SHA256 over `${id}.${timestamp}.` and the raw body bytes, keyed with the
// base64 secret after `whsec_`, compared in constant time, the timestamp within 5 minutes
// either way) and answers 200 `{}` or 401. No framework, no logging, no store, no dependency.
//
// With --durable <file> it is the durable ceiling: each verified delivery is also a row of one
// SQLite table (better-sqlite3, WAL), unique by its webhook-id, and is answered only once that
// row is on disk, as longhaul answers. The deliveries verified in one turn of the event loop
// are one transaction (group commit); the WAL is then synced with fdatasync on the thread pool,
// and the deliveries verified while a sync runs commit together once it ends, covered by the
// next sync. One table, one index, no queue, no framework: what durability alone costs on this
// machine.
//
// With --writer-thread as well, that writer runs on a thread of its own: the main thread reads
// and verifies each delivery and hands the turn's deliveries to the writer in one message. It
// shows what moving the SQLite writer off the event loop gives on this machine.
//
//   BENCH_WHSEC=whsec_… node bench/ceiling/standard-webhooks-server.mjs [--durable file [--writer-thread]] [port]
//
// It listens on 127.0.0.1 (port 0, any free one, by default) and prints one JSON line,
// {"url": "http://127.0.0.1:<port>"}, once it is listening. `GET /healthz` answers 200.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { durableRecorder, threadRecorder } from "./durable-recorder.mjs";

const TOLERANCE_S = 300;
const BODY_LIMIT = 1024 * 1024;
const secret = process.env.BENCH_WHSEC ?? "";
if (!secret.startsWith("whsec_")) {
  console.error("Set BENCH_WHSEC to a whsec_ secret.");
  process.exit(2);
}
const key = Buffer.from(secret.slice("whsec_".length), "base64");
const { values: opts, positionals } = parseArgs({
  options: { durable: { type: "string" }, "writer-thread": { type: "boolean", default: false } },
  allowPositionals: true,
});
const record = !opts.durable
  ? null
  : opts["writer-thread"]
    ? await threadRecorder(opts.durable)
    : await durableRecorder(opts.durable);

/** True when one `v1,<base64>` entry of the header is the HMAC of this delivery. */
function verified(headers, body) {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signature = headers["webhook-signature"];
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signature !== "string") return false;
  if (!/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_S) return false;
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
  for (const entry of signature.split(" ")) {
    if (!entry.startsWith("v1,")) continue;
    const given = Buffer.from(entry.slice(3), "base64");
    if (given.length === expected.length && timingSafeEqual(given, expected)) return true;
  }
  return false;
}

const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/healthz") {
    res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
    return;
  }
  const chunks = [];
  let size = 0;
  let refused = false;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size > BODY_LIMIT) {
      refused = true;
      res.writeHead(413, { "content-type": "application/json", connection: "close" }).end("{}");
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on("end", () => {
    if (refused) return;
    const body = Buffer.concat(chunks, size);
    const ok = verified(req.headers, body);
    if (!ok || !record) {
      res.writeHead(ok ? 200 : 401, { "content-type": "application/json" }).end("{}");
      return;
    }
    record(req.headers["webhook-id"], body, (err) =>
      res.writeHead(err ? 503 : 200, { "content-type": "application/json" }).end("{}"),
    );
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(positionals[0] ?? 0), "127.0.0.1", () => {
  const { port } = server.address();
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
});
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
