// The payload bench's load generator (bench/payload-read.ts), in a process of its own: `--total`
// GETs of `--url`, `--concurrency` at a time over keep-alive connections, with `--key` as a
// bearer token. Prints one JSON line: requests per second, p50 and p99 in ms, the errors (a
// status other than 200) and the bytes of the last answer.
import { Agent, request } from "node:http";

const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
};
const url = new URL(arg("url"));
const total = Number(arg("total"));
const concurrency = Number(arg("concurrency"));
const key = arg("key");
const agent = new Agent({ keepAlive: true, maxSockets: concurrency });

const get = () =>
  new Promise((resolve) => {
    const req = request(url, { agent, headers: key ? { authorization: `Bearer ${key}` } : {} }, (res) => {
      let bytes = 0;
      res.on("data", (d) => {
        bytes += d.length;
      });
      res.on("end", () => resolve({ ok: res.statusCode === 200, bytes }));
    });
    req.on("error", () => resolve({ ok: false, bytes: 0 }));
    req.end();
  });

const latencies = [];
let next = 0;
let errors = 0;
let lastBytes = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < total) {
      next++;
      const t = performance.now();
      const r = await get();
      latencies.push(performance.now() - t);
      if (!r.ok) errors++;
      lastBytes = r.bytes;
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
agent.destroy();
console.log(
  JSON.stringify({ perSecond: total / seconds, p50Ms: at(0.5), p99Ms: at(0.99), errors, bytes: lastBytes }),
);
