// The load generator of bench/ingest-http.ts, in a process of its own so that it never shares
// a thread with a server it measures: autocannon, driven programmatically, against one URL.
//
//   node bench/load-autocannon.mjs --url http://127.0.0.1:8787/hooks/sim [--seconds 10]
//     [--warmup 2] [--connections 32] [--sign] [--ids-out file] [--id-prefix p] [--rate n]
//
// With --sign (BENCH_WHSEC holds the whsec_ secret) every request is a POST of a distinct
// provider event of about 300 bytes with its own `webhook-id`, the current `webhook-timestamp`
// and a valid Standard Webhooks `v1` signature, made in `setupRequest`: signing costs this
// process, not the server. Without --sign every request is a plain GET. A warm-up run of
// --warmup seconds comes first and is not measured; the measured run lasts --seconds. The
// last line of stdout is JSON: req/s, p50 and p99 latency in ms, the 2xx and non-2xx counts,
// connection errors and timeouts, and the warm-up's counts. --ids-out writes the webhook-id of
// every request answered 2xx (warm-up included), one a line, so that the bench can check each
// against the store. --series adds the measured run's 2xx answers counted per 100 ms of the
// wall clock (`series`: the first window's start in epoch ms and the counts), so that the bench
// can keep the part of a window during which something else was going on. --rate caps the
// requests sent per second, over all connections (autocannon's `overallRate`), for latency at a
// set rate instead of at the most the server takes.
//
// autocannon is a devDependency; BENCH_AUTOCANNON may name another folder to load it from.
import { createHmac } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";

const require = createRequire(import.meta.url);
const autocannon = require(process.env.BENCH_AUTOCANNON || "autocannon");

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    seconds: { type: "string", default: process.env.BENCH_SECONDS || "10" },
    warmup: { type: "string", default: "2" },
    connections: { type: "string", default: "32" },
    sign: { type: "boolean", default: false },
    "ids-out": { type: "string" },
    "id-prefix": { type: "string", default: `msg_${process.pid}` },
    series: { type: "boolean", default: false },
    rate: { type: "string" },
  },
});
if (!values.url) throw new Error("--url is required");
const target = new URL(values.url);
if (!["127.0.0.1", "localhost", "[::1]"].includes(target.hostname)) {
  throw new Error(`This load generator only targets loopback, not ${target.hostname}.`);
}

const secret = process.env.BENCH_WHSEC ?? "";
if (values.sign && !secret.startsWith("whsec_")) throw new Error("--sign needs BENCH_WHSEC=whsec_…");
const key = values.sign ? Buffer.from(secret.slice("whsec_".length), "base64") : Buffer.alloc(0);
const filler = "x".repeat(120);
let seq = 0;
const okIds = [];

/** A distinct signed delivery: a provider event in the shape {id, type, data: {job_id}}. */
function setupRequest(req, context) {
  const n = ++seq;
  const id = `${values["id-prefix"]}_${n}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const body = JSON.stringify({
    id: `evt_${id}`,
    type: "job.succeeded",
    created_at: new Date().toISOString(),
    data: { job_id: `job_${id}`, output: { text: filler }, usage: { total_tokens: 321 } },
  });
  const signature = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest("base64");
  context.id = id;
  return {
    ...req,
    method: "POST",
    body,
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": timestamp,
      "webhook-signature": `v1,${signature}`,
    },
  };
}

const SERIES_MS = 100;
/** 2xx answers of the measured run per SERIES_MS window, from `seriesStart` on (`--series`). */
const series = [];
let seriesStart = null;
let measuring = false;
function count(status) {
  if (!measuring || status < 200 || status >= 300) return;
  const now = Date.now();
  seriesStart ??= now - (now % SERIES_MS);
  const i = Math.floor((now - seriesStart) / SERIES_MS);
  while (series.length <= i) series.push(0);
  series[i]++;
}

function onResponse(status, _body, context) {
  if (status >= 200 && status < 300) okIds.push(context.id);
  if (values.series) count(status);
}

function run(seconds) {
  return autocannon({
    url: target.origin,
    connections: Number(values.connections),
    pipelining: 1,
    duration: seconds,
    ...(values.rate ? { overallRate: Number(values.rate) } : {}),
    requests: [
      values.sign
        ? { path: target.pathname, setupRequest, onResponse }
        : { path: target.pathname, ...(values.series ? { onResponse: (status) => count(status) } : {}) },
    ],
  });
}

const summary = (r) => {
  const ok = Object.entries(r.statusCodeStats ?? {})
    .filter(([code]) => code.startsWith("2"))
    .reduce((s, [, v]) => s + Number(v.count), 0);
  return { ok, non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts };
};

const warm = Number(values.warmup) > 0 ? summary(await run(Number(values.warmup))) : null;
measuring = true;
const r = await run(Number(values.seconds));
const answered = Object.values(r.statusCodeStats ?? {}).reduce((s, v) => s + Number(v.count), 0);
if (values["ids-out"]) writeFileSync(values["ids-out"], okIds.join("\n"));
console.log(
  JSON.stringify({
    url: target.href,
    connections: Number(values.connections),
    rate: values.rate ? Number(values.rate) : undefined,
    seconds: r.duration,
    requests: answered,
    rps: answered / r.duration,
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    ...summary(r),
    warmup: warm,
    ok_ids: values.sign ? okIds.length : undefined,
    series: values.series ? { start: seriesStart, ms: SERIES_MS, counts: series } : undefined,
  }),
);
