// The upload bench's load generator (bench/upload.ts), in a process of its own: one raw
// `application/octet-stream` POST of `--bytes` bytes, generated as it is sent (one 1 MiB random
// buffer repeated, never the whole body in memory), with `--key` as a bearer token if given.
// Prints one JSON line: the status, the seconds from the first byte sent to the answer's end,
// and the answer's body.
import { randomBytes } from "node:crypto";
import { request } from "node:http";

const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
};
const url = new URL(arg("url"));
const bytes = Number(arg("bytes"));
const key = arg("key");
const chunk = randomBytes(1 << 20);

const started = performance.now();
const req = request(url, {
  method: "POST",
  headers: {
    "content-type": "application/octet-stream",
    "content-length": String(bytes),
    ...(key ? { authorization: `Bearer ${key}` } : {}),
  },
});
const answered = new Promise((resolve, reject) => {
  req.on("error", reject);
  req.on("response", (res) => {
    let body = "";
    res.setEncoding("utf8");
    res.on("data", (d) => {
      body += d;
    });
    res.on("end", () => resolve({ status: res.statusCode, body }));
  });
});
let sent = 0;
const write = () => {
  while (sent < bytes) {
    const n = Math.min(chunk.length, bytes - sent);
    sent += n;
    if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
      req.once("drain", write);
      return;
    }
  }
  req.end();
};
write();
const r = await answered;
console.log(JSON.stringify({ ...r, seconds: (performance.now() - started) / 1000 }));
