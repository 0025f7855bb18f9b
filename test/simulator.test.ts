import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { LonghaulError } from "../src/core/errors.ts";
import { standardWebhooks } from "../src/ingress/standard-webhooks.ts";
import type { CreateJobRequest } from "../src/providers/provider.ts";
import { ProviderError } from "../src/providers/provider.ts";
import { runModel } from "../src/providers/sim/llm.ts";
import { simProvider } from "../src/providers/sim/sim-provider.ts";
import { type Simulator, type SimulatorOptions, startSimulator } from "../src/providers/sim/simulator.ts";
import { waitFor } from "./helpers.ts";

const SECRET = "whsec_c2ltdWxhdG9yIHRlc3Qgc2VjcmV0IGZvciBsb25naGF1bA==";

interface SimEvent {
  id: string;
  type: string;
  created_at: string;
  data: { job_id: string; output?: unknown; error?: { code: string; message: string }; usage?: unknown };
}

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
  event: SimEvent;
}

interface Receiver {
  url: string;
  received: Received[];
  /** Resolves with everything received once `done` holds; rejects after `timeoutMs`. */
  until(done: (received: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A webhook endpoint that records every request and answers with `answer`'s status. */
async function startReceiver(
  answer: (r: Received, sameIdBefore: number) => number = () => 200,
): Promise<Receiver> {
  const received: Received[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const r: Received = {
        headers: req.headers,
        body,
        event: JSON.parse(body.toString("utf8")) as SimEvent,
      };
      const sameIdBefore = received.filter((x) => x.headers["webhook-id"] === r.headers["webhook-id"]).length;
      received.push(r);
      res.writeHead(answer(r, sameIdBefore)).end();
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}/hooks/sim`,
    received,
    until(done, timeoutMs = 3000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!done(received)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(received);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out; received ${JSON.stringify(received.map((r) => r.event.type))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  cleanups.push(() => receiver.close());
  return receiver;
}

async function startSim(options: Partial<SimulatorOptions> = {}): Promise<Simulator> {
  const sim = await startSimulator({ secret: SECRET, runningAfterMs: 10, defaultDurationMs: 30, ...options });
  cleanups.push(() => sim.close());
  return sim;
}

async function post(sim: Simulator, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${sim.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

async function get(sim: Simulator, path: string) {
  const res = await fetch(`${sim.url}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

function createJob(sim: Simulator, key: string, input: unknown, webhookUrl: string) {
  return post(sim, "/v1/jobs", { input, webhook_url: webhookUrl }, { "idempotency-key": key });
}

function jobRequest(key: string, input: unknown, webhookUrl: string): CreateJobRequest {
  return { input, idempotencyKey: key, webhookUrl, tenantId: "tn_1", taskId: "t_1", stepId: key };
}

function types(received: Received[]): string[] {
  return received.map((r) => r.event.type);
}

const ended = (type: string) => ["job.succeeded", "job.failed", "job.canceled"].includes(type);

test("a created job sends job.running then job.succeeded, both signed with Standard Webhooks", async () => {
  const receiver = await startReceiver();
  const sim = await startSim();
  const provider = simProvider({ baseUrl: sim.url });
  const created = await provider.create(jobRequest("t_1:echo", { text: "hello there world" }, receiver.url));
  assert.equal(created.status, "created");
  assert.match(created.jobId, /^job_/);

  const received = await receiver.until((r) => r.length === 2);
  assert.deepEqual(types(received), ["job.running", "job.succeeded"]);
  for (const r of received) {
    assert.equal(r.headers["content-type"], "application/json");
    const verified = standardWebhooks.verify({
      headers: r.headers,
      body: r.body,
      secrets: [SECRET],
      toleranceS: 300,
      nowMs: Date.now(),
    });
    assert.equal(verified.eventId, r.event.id);
    assert.match(r.event.id, /^evt_/);
    assert.equal(r.event.data.job_id, created.jobId);
  }
  const succeeded = provider.parseEvent(received[1]!.event);
  assert.deepEqual(succeeded.output, { text: "hello there world" });
  assert.deepEqual(succeeded.usage, { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });

  const snapshot = await provider.status!(created.jobId);
  assert.equal(snapshot.status, "succeeded");
  assert.deepEqual(snapshot.output, { text: "hello there world" });
});

test("the same idempotency key returns the same job, created once", async () => {
  const receiver = await startReceiver();
  const sim = await startSim();
  const first = await createJob(sim, "t_2:dispatch", { text: "once" }, receiver.url);
  const again = await createJob(sim, "t_2:dispatch", { text: "once" }, receiver.url);
  assert.equal(first.status, 201);
  assert.deepEqual(first.body, { id: first.body.id, status: "queued" });
  assert.equal(again.status, 200);
  assert.equal(again.body.id, first.body.id);
  const viaProvider = await simProvider({ baseUrl: sim.url }).create(
    jobRequest("t_2:dispatch", { text: "once" }, receiver.url),
  );
  assert.equal(viaProvider.jobId, first.body.id);
  assert.deepEqual(sim.stats().createsByKey, { "t_2:dispatch": 1 });
  assert.equal(sim.stats().jobsCreated, 1);
});

test("an input asking to fail ends the job with job.failed and its error", async () => {
  const receiver = await startReceiver();
  const sim = await startSim();
  const { body } = await createJob(sim, "t_3:fail", { text: "x", fail: true }, receiver.url);
  const received = await receiver.until((r) => r.some((x) => ended(x.event.type)));
  const failed = received.find((r) => r.event.type === "job.failed");
  assert.ok(failed);
  assert.deepEqual(failed.event.data.error, { code: "model_error", message: "the model failed as asked" });
  assert.ok(failed.event.data.usage);
  const status = await get(sim, `/v1/jobs/${body.id}`);
  assert.equal(status.body.status, "failed");

  await createJob(sim, "t_3:fail-msg", { fail: "out of credits" }, receiver.url);
  const withMessage = await receiver.until(
    (r) => r.filter((x) => x.event.type === "job.failed").length === 2,
  );
  assert.equal(withMessage.at(-1)!.event.data.error!.message, "out of credits");
});

test("an event answered 500 twice is redelivered with the same webhook-id until answered 200", async () => {
  const receiver = await startReceiver((r, sameIdBefore) =>
    r.event.type === "job.succeeded" && sameIdBefore < 2 ? 500 : 200,
  );
  const sim = await startSim({ retryScheduleMs: [20, 20, 20] });
  await createJob(sim, "t_4:retry", { text: "again" }, receiver.url);
  const received = await receiver.until(
    (r) => r.filter((x) => x.event.type === "job.succeeded").length === 3,
  );
  const attempts = received.filter((r) => r.event.type === "job.succeeded");
  assert.equal(new Set(attempts.map((r) => r.headers["webhook-id"])).size, 1);
  assert.equal(
    new Set(attempts.map((r) => r.body.toString("utf8"))).size,
    1,
    "every attempt sends the same bytes",
  );
  for (const r of attempts) {
    standardWebhooks.verify({
      headers: r.headers,
      body: r.body,
      secrets: [SECRET],
      toleranceS: 300,
      nowMs: Date.now(),
    });
  }
  await waitFor(() => sim.stats().deliveries === 2, 10_000, "the sim to count the 200");
  assert.equal(
    received.filter((r) => r.event.type === "job.succeeded").length,
    3,
    "a 200 ends the redeliveries",
  );
  assert.equal(sim.stats().deliveries, 2);
  assert.equal(sim.stats().failedDeliveries, 0);
});

test("a delivery refused through the whole retry schedule is given up and counted", async () => {
  const receiver = await startReceiver(() => 503);
  const sim = await startSim({ retryScheduleMs: [10, 10] });
  await createJob(sim, "t_5:unreachable", { text: "lost" }, receiver.url);
  await receiver.until((r) => r.length === 6);
  await sleep(60);
  assert.equal(receiver.received.length, 6, "two events, three attempts each");
  assert.equal(sim.stats().failedDeliveries, 2);
  assert.equal(sim.stats().deliveries, 0);
});

/** Creates `keys` jobs and waits until every job has ended and no event has arrived for a while. */
async function runKeys(sim: Simulator, receiver: Receiver, keys: string[]): Promise<Map<string, string[]>> {
  const idToKey = new Map<string, string>();
  for (const key of keys) {
    const { body } = await createJob(sim, key, { text: key }, receiver.url);
    idToKey.set(body.id as string, key);
  }
  for (;;) {
    const before = receiver.received.length;
    await sleep(150);
    const statuses = await Promise.all([...idToKey.keys()].map((id) => get(sim, `/v1/jobs/${id}`)));
    if (receiver.received.length === before && statuses.every((s) => s.body.status === "succeeded")) break;
  }
  const byKey = new Map<string, string[]>(keys.map((k) => [k, []]));
  for (const r of receiver.received) byKey.get(idToKey.get(r.event.data.job_id)!)!.push(r.event.type);
  return byKey;
}

test("chaos decisions depend only on the seed and the idempotency key", async () => {
  const chaos = { duplicate: 0.5, reorder: 0.5, drop: 0.3, delayMs: [0, 20] as [number, number] };
  const keys = Array.from({ length: 8 }, (_, i) => `t_6:step-${i}`);
  // The second run creates its jobs in reverse: arrival order must not change any decision.
  const plans: [number, string[]][] = [
    [7, keys],
    [7, [...keys].reverse()],
    [8, keys],
  ];
  const runs = [];
  for (const [seed, order] of plans) {
    const receiver = await startReceiver();
    const sim = await startSim({ seed, chaos });
    const byKey = await runKeys(sim, receiver, order);
    const { jobsCreated: _, createsByKey: __, ...choices } = sim.stats();
    runs.push({ byKey: new Map([...byKey].map(([k, v]) => [k, [...v].sort()])), choices });
  }
  const [a, b, c] = runs;
  assert.deepEqual(a!.byKey, b!.byKey);
  assert.deepEqual(a!.choices, b!.choices);
  assert.ok(
    a!.choices.dropped + a!.choices.duplicated + a!.choices.reordered > 0,
    "the rates made some choices",
  );
  assert.notDeepEqual(a!.byKey, c!.byKey, "another seed makes other choices");
});

test("reorder=1 sends job.running after the terminal event", async () => {
  const receiver = await startReceiver();
  const sim = await startSim({ chaos: { reorder: 1 } });
  await createJob(sim, "t_7:reorder", { text: "late" }, receiver.url);
  const received = await receiver.until((r) => r.length === 2);
  assert.deepEqual(types(received), ["job.succeeded", "job.running"]);
  assert.equal(sim.stats().reordered, 1);
});

test("duplicate=1 delivers every event twice with the same webhook-id", async () => {
  const receiver = await startReceiver();
  const sim = await startSim({ chaos: { duplicate: 1 } });
  await createJob(sim, "t_8:twice", { text: "echo" }, receiver.url);
  const received = await receiver.until((r) => r.length === 4);
  const ids = received.map((r) => r.headers["webhook-id"]);
  assert.equal(new Set(ids).size, 2);
  assert.deepEqual(types(received).sort(), ["job.running", "job.running", "job.succeeded", "job.succeeded"]);
  assert.equal(sim.stats().duplicated, 2);
});

test("drop=1 sends no event, yet a status poll reports the job succeeded", async () => {
  const receiver = await startReceiver();
  const sim = await startSim({ chaos: { drop: 1 } });
  const provider = simProvider({ baseUrl: sim.url });
  const { jobId } = await provider.create(jobRequest("t_9:silent", { text: "quiet" }, receiver.url));
  await waitFor(() => sim.stats().dropped === 2, 10_000, "both events dropped");
  assert.equal(receiver.received.length, 0);
  const snapshot = await provider.status!(jobId);
  assert.equal(snapshot.status, "succeeded");
  assert.deepEqual(snapshot.output, { text: "quiet" });
  assert.equal(sim.stats().dropped, 2);
});

test("failCreate=1 answers 503 and creates nothing", async () => {
  const receiver = await startReceiver();
  const sim = await startSim({ chaos: { failCreate: 1 } });
  const res = await createJob(sim, "t_10:refused", { text: "no" }, receiver.url);
  assert.equal(res.status, 503);
  assert.equal(res.body.error.code, "unavailable");
  await assert.rejects(
    simProvider({ baseUrl: sim.url }).create(jobRequest("t_10:refused", { text: "no" }, receiver.url)),
    (err) => err instanceof ProviderError && err.retriable && err.status === 503,
  );
  const stats = sim.stats();
  assert.equal(stats.jobsCreated, 0);
  assert.deepEqual(stats.createsByKey, {});
  assert.equal(stats.failedCreates, 2);
  await sleep(50);
  assert.equal(receiver.received.length, 0);
});

test("a creation refused by chaos succeeds on a retry with the same key, and only once", async () => {
  const receiver = await startReceiver();
  // With seed 2 the first attempt for this key is refused and the second admitted.
  const sim = await startSim({ seed: 2, chaos: { failCreate: 0.5 } });
  const first = await createJob(sim, "t_11:flaky", { text: "retry" }, receiver.url);
  const second = await createJob(sim, "t_11:flaky", { text: "retry" }, receiver.url);
  assert.deepEqual([first.status, second.status], [503, 201]);
  assert.deepEqual(sim.stats().createsByKey, { "t_11:flaky": 1 });
  assert.equal(sim.stats().failedCreates, 1);
});

test("a simulator restarted on the same state file ends a pending job and sends its event", async () => {
  const dir = mkdtempSync(join(tmpdir(), "longhaul-sim-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const stateFile = join(dir, "sim.db");
  const receiver = await startReceiver();
  const first = await startSimulator({ secret: SECRET, stateFile, runningAfterMs: 10 });
  const { body } = await createJob(
    first,
    "t_12:survive",
    { text: "still here", delay_ms: 400 },
    receiver.url,
  );
  await receiver.until((r) => r.length === 1);
  // A delivery cut off by close() is sent again by the successor (at least once); wait for the answer.
  while (first.stats().deliveries < 1) await sleep(5);
  await first.close();

  const second = await startSim({ stateFile, runningAfterMs: 10 });
  const received = await receiver.until((r) => r.length === 2);
  assert.deepEqual(types(received), ["job.running", "job.succeeded"]);
  assert.equal(received[1]!.event.data.job_id, body.id);
  const again = await createJob(second, "t_12:survive", { text: "still here" }, receiver.url);
  assert.equal(again.status, 200);
  assert.equal(again.body.id, body.id);
  assert.equal(again.body.status, "succeeded");
  assert.deepEqual(second.stats().createsByKey, { "t_12:survive": 1 });
});

test("an event still undelivered when the simulator closed is delivered by its successor", async () => {
  const dir = mkdtempSync(join(tmpdir(), "longhaul-sim-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const stateFile = join(dir, "sim.db");
  const receiver = await startReceiver((r, sameIdBefore) =>
    r.event.type === "job.succeeded" && sameIdBefore === 0 ? 500 : 200,
  );
  const first = await startSimulator({ secret: SECRET, stateFile, retryScheduleMs: [60_000] });
  await createJob(first, "t_13:pending", { text: "later" }, receiver.url);
  await receiver.until((r) => r.some((x) => x.event.type === "job.succeeded"));
  await first.close();

  await startSim({ stateFile, retryScheduleMs: [0] });
  const received = await receiver.until(
    (r) => r.filter((x) => x.event.type === "job.succeeded").length === 2,
  );
  const succeeded = received.filter((r) => r.event.type === "job.succeeded");
  assert.equal(succeeded[0]!.headers["webhook-id"], succeeded[1]!.headers["webhook-id"]);
});

test("cancel ends a running job with job.canceled and refuses a job that already ended", async () => {
  const receiver = await startReceiver();
  const sim = await startSim();
  const provider = simProvider({ baseUrl: sim.url });
  const { jobId } = await provider.create(
    jobRequest("t_14:cancel", { text: "slow", delay_ms: 5000 }, receiver.url),
  );
  await receiver.until((r) => r.length === 1);
  await provider.cancel!(jobId);
  const received = await receiver.until((r) => r.length === 2);
  assert.equal(received[1]!.event.type, "job.canceled");
  assert.equal((await provider.status!(jobId)).status, "canceled");
  assert.equal((await post(sim, `/v1/jobs/${jobId}/cancel`, "")).status, 200, "canceling twice is harmless");

  const done = await createJob(sim, "t_14:done", { text: "fast", delay_ms: 0 }, receiver.url);
  await receiver.until((r) => r.some((x) => x.event.type === "job.succeeded"));
  const refused = await post(sim, `/v1/jobs/${done.body.id}/cancel`, "");
  assert.equal(refused.status, 409);
  await provider.cancel!(done.body.id as string);
});

test("bad requests get a JSON 4xx and never stop the simulator", async () => {
  const sim = await startSim();
  const hook = "http://127.0.0.1:9/hook";
  assert.equal((await post(sim, "/v1/jobs", "{not json", { "idempotency-key": "k" })).status, 400);
  const noKey = await post(sim, "/v1/jobs", { input: {}, webhook_url: hook });
  assert.equal(noKey.status, 400);
  assert.equal(noKey.body.error.code, "idempotency_key_required");
  assert.equal((await createJob(sim, "k1", { delay_ms: -1 }, hook)).status, 400);
  assert.equal((await createJob(sim, "k2", {}, "ftp://example.com")).status, 400);
  assert.equal((await post(sim, "/v1/jobs", "[]", { "idempotency-key": "k3" })).status, 400);
  assert.equal((await get(sim, "/v1/jobs/job_missing")).status, 404);
  assert.equal((await get(sim, "/v1/nowhere")).status, 404);
  assert.equal((await get(sim, "/v1/jobs/%E0%A4%A")).status, 404);
  assert.equal((await get(sim, "/v1/jobs")).status, 405);
  assert.equal((await get(sim, "/v1/stats")).status, 200);
  assert.equal(sim.stats().jobsCreated, 0);
});

test("an event outside the brief's shape is refused as VALIDATION_FAILED", () => {
  const provider = simProvider({ baseUrl: "http://127.0.0.1:9" });
  const bad: unknown[] = [
    null,
    [],
    { type: "job.succeeded", data: { job_id: "job_1" } },
    { id: "evt_1", type: "job.exploded", data: { job_id: "job_1" } },
    { id: "evt_1", type: "job.succeeded", data: {} },
    { id: "evt_1", type: "job.failed", data: { job_id: "job_1", error: "boom" } },
    { id: "evt_1", type: "job.succeeded", data: { job_id: "job_1", usage: { total_tokens: "many" } } },
  ];
  for (const body of bad) {
    assert.throws(
      () => provider.parseEvent(body),
      (err) => err instanceof LonghaulError && err.code === "VALIDATION_FAILED",
    );
  }
  assert.deepEqual(
    provider.parseEvent({
      id: "evt_1",
      type: "job.failed",
      data: { job_id: "job_1", error: { code: "model_error", message: "no" } },
    }),
    { eventId: "evt_1", type: "job.failed", jobId: "job_1", error: { code: "model_error", message: "no" } },
  );
});

test("a network failure when creating is a retriable ProviderError", async () => {
  const receiver = await startReceiver();
  const sim = await startSim();
  const url = sim.url;
  await sim.close();
  await assert.rejects(
    simProvider({ baseUrl: url }).create(jobRequest("t_15:down", {}, receiver.url)),
    (err) => err instanceof ProviderError && err.retriable && err.status === undefined,
  );
});

test("the fake model summarises a document by its first sentences and counts words", () => {
  const document =
    "Longhaul runs long tasks. It suspends while providers work! Webhooks resume it. " +
    "This last sentence goes on and on, long enough that it no longer fits in the summary, whose limit is two hundred characters, so it is left out.";
  const result = runModel({ document });
  assert.ok(result.ok);
  assert.deepEqual(result.output, {
    summary: "Summary: Longhaul runs long tasks. It suspends while providers work! Webhooks resume it.",
  });
  assert.equal(result.usage.prompt_tokens, document.split(" ").length);
  assert.equal(result.usage.completion_tokens, 13);
  assert.equal(result.usage.total_tokens, result.usage.prompt_tokens + 13);
  assert.deepEqual(runModel({ instruction: "echo", text: "" }).usage, {
    prompt_tokens: 1,
    completion_tokens: 1,
    total_tokens: 2,
  });
});
