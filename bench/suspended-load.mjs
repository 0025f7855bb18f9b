// The load generator of `bench:suspended` (part 2), in a process of its own so that its HTTP
// client never shares the event loop or the heap of the server it measures. Plain JavaScript
// and node:http only: it starts in a few milliseconds.
//
// It gets its plan over IPC, then runs rounds of three open-loop phases at the same rate: POSTs
// to the server's no-op route, a 512-byte append + fdatasync on the database's disk (the floor
// under every durable write), and the signed callback POSTs. After each callback phase it sends
// the time each POST went out and waits until the server has seen those tasks end, so the
// phases never overlap. Times are the machine's wall clock with sub-millisecond precision
// (`performance.timeOrigin + performance.now()`), which both processes read alike.
import { open } from "node:fs/promises";
import { Agent, request } from "node:http";

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Sends `count` requests on a fixed schedule, `rate` per second, whatever the answers' pace. */
async function openLoop(rate, count, send) {
  const latencies = [];
  let errors = 0;
  const inFlight = [];
  const interval = 1000 / rate;
  const start = performance.now();
  let last = start;
  for (let i = 0; i < count; ) {
    const t = performance.now();
    const due = start + i * interval;
    if (t < due) {
      await sleep(due - t);
      continue;
    }
    last = t;
    const index = i++;
    inFlight.push(
      send(index)
        .catch(() => false)
        .then((ok) => {
          latencies.push(performance.now() - t);
          if (!ok) errors++;
        }),
    );
  }
  await Promise.all(inFlight);
  return { latencies, errors, sent: count, seconds: (last - start) / 1000 };
}

/**
 * The answer's status, or "network (<error code>)" when none came. node:http with a keep-alive
 * agent: its own cost and pauses are a fraction of `fetch`'s, which would otherwise show in
 * every figure. A request whose connection was reset before any answer came (on a kept-alive
 * socket the server closed just as it was reused, Node's documented `reusedSocket` race, or
 * on a new one) is sent again once, its time counted from the first send; such resends are
 * counted and reported.
 */
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const resent = { reused: 0, fresh: 0 };
function post(url, body, timeoutMs, retried = false) {
  return new Promise((resolve) => {
    const req = request(url, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      timeout: timeoutMs,
    });
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      res.resume();
      res.on("end", () => resolve(String(res.statusCode)));
      res.on("error", (err) => resolve(`network (${err.code ?? err.message})`));
    });
    req.on("timeout", () => req.destroy());
    req.on("error", (err) => {
      if (!retried && !answered && err.code === "ECONNRESET") {
        resent[req.reusedSocket ? "reused" : "fresh"]++;
        resolve(post(url, body, timeoutMs, true));
      } else resolve(`network (${err.code ?? err.message})`);
    });
    req.end(body);
  });
}

/** Asks the server to wait until the tasks of these callbacks have ended; resolves when it has. */
function drained(sent) {
  return new Promise((resolve) => {
    const onMessage = (m) => {
      if (m?.type !== "drained") return;
      process.off("message", onMessage);
      resolve();
    };
    process.on("message", onMessage);
    process.send({ type: "round", sent });
  });
}

async function run(plan) {
  const { noopUrl, callbacks, rate, warm, perRound, rounds, diskPath, timeoutMs, limitMs } = plan;
  const noop = async () => (await post(noopUrl, '{"ok":true}', timeoutMs)) === "200";
  const failures = {};
  let recording = false;
  const callbackPhase = async (from, count) => {
    const sent = [];
    const phase = await openLoop(rate, count, async (i) => {
      const cb = callbacks[from + i];
      const at = now();
      const answer = await post(cb.url, '{"ok":true}', timeoutMs);
      if (answer === "200") {
        sent.push([cb.id, at]);
        return true;
      }
      if (recording) failures[answer] = (failures[answer] ?? 0) + 1;
      return false;
    });
    await drained(sent);
    return phase;
  };

  await openLoop(rate, warm, noop);
  await callbackPhase(0, warm);

  const disk = await open(diskPath, "a");
  const block = Buffer.alloc(512, 1);
  const syncWrite = async () => {
    await disk.write(block);
    await disk.datasync();
    return true;
  };
  const phases = { noop: [], disk: [], callbacks: [] };
  recording = true;
  process.send({ type: "recording" });
  const started = performance.now();
  for (let from = warm, r = 0; from < callbacks.length && r < rounds; from += perRound, r++) {
    if (performance.now() - started > limitMs) break;
    const n = Math.min(perRound, callbacks.length - from);
    phases.noop.push(await openLoop(rate, n, noop));
    phases.disk.push(await openLoop(rate, n, syncWrite));
    phases.callbacks.push(await callbackPhase(from, n));
  }
  await disk.close();
  // Every latency of the run, in one message: the channel is closed only once it is written.
  await new Promise((resolve) => process.send({ type: "done", phases, failures, resent }, resolve));
}

process.once("message", (plan) => {
  run(plan).then(
    () => process.disconnect(),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
});
