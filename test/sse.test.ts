import assert from "node:assert/strict";
import http from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { EventSource } from "eventsource";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask } from "../src/core/task-type.ts";
import { sseFrame } from "../src/http/event-streams.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { sleep, tempDir, waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const twoSteps = defineTask("sse.steps", async (_input: unknown, step) => {
  await step.run("a", () => 1);
  await step.run("b", () => 2);
  return { ok: true };
});
const BIG = 64 * 1024;
const big = defineTask("sse.big", async () => "x".repeat(BIG));

/** Every type the log holds: named SSE events reach only listeners of their own name. */
const TYPES = [
  ...["created", "running", "waiting", "succeeded", "failed", "canceled", "timed_out"].map(
    (s) => `task.${s}`,
  ),
  ...["succeeded", "failed", "waiting", "timed_out", "canceled", "decided", "reminder", "escalated"].map(
    (s) => `step.${s}`,
  ),
  ...["created", "running", "succeeded", "failed", "canceled", "timed_out"].map((s) => `job.${s}`),
];

interface Received {
  id: number;
  type: string;
  data: { seq: number; task_id: string; type: string; data: unknown; created_at: string };
}

/** A real EventSource client with the tenant's key (and an optional Last-Event-ID to resume from). */
function subscribe(stack: Stack, query = "", opts: { key?: string; lastEventId?: number } = {}) {
  const received: Received[] = [];
  const es = new EventSource(`${stack.url}/v1/events${query}`, {
    fetch: (input, init) =>
      fetch(input, {
        ...init,
        headers: {
          ...init?.headers,
          authorization: `Bearer ${opts.key ?? stack.key}`,
          ...(opts.lastEventId === undefined ? {} : { "last-event-id": String(opts.lastEventId) }),
        },
      }),
  });
  for (const type of TYPES) {
    es.addEventListener(type, (e) => {
      received.push({ id: Number(e.lastEventId), type: e.type, data: JSON.parse(e.data) });
    });
  }
  const opened = new Promise<void>((resolve, reject) => {
    es.onopen = () => resolve();
    es.onerror = (e) => reject(e);
  });
  return { es, received, opened };
}

async function submit(stack: Stack, type: string, key = stack.key): Promise<string> {
  const r = await fetch(`${stack.url}/v1/tasks`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ type, input: {} }),
  });
  assert.equal(r.status, 202);
  return ((await r.json()) as { task_id: string }).task_id;
}

async function ended(stack: Stack, taskId: string) {
  await waitFor(async () => {
    const events = await stack.store.taskEvents(stack.tenantId, 0, 10_000, taskId);
    return events.some((e) => e.type === "task.succeeded");
  }, 15_000);
}

const logOf = async (stack: Stack, afterSeq = 0, taskId?: string) =>
  (await stack.store.taskEvents(stack.tenantId, afterSeq, 100_000, taskId)).map((e) => [e.seq, e.type]);

describe("GET /v1/events (SSE)", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ taskTypes: [twoSteps, big], realtime: { heartbeatMs: 200 } });
  });
  after(() => stack.close());

  test("a subscriber receives a task's events in log order with the wire format of the contract", async () => {
    const sub = subscribe(stack);
    await sub.opened;
    const id = await submit(stack, "sse.steps");
    await ended(stack, id);
    const expected = await logOf(stack, 0, id);
    await waitFor(() => sub.received.filter((r) => r.data.task_id === id).length >= expected.length);
    sub.es.close();
    const mine = sub.received.filter((r) => r.data.task_id === id);
    assert.deepEqual(
      mine.map((r) => [r.id, r.type]),
      expected,
    );
    assert.deepEqual(
      expected.map(([, t]) => t),
      ["task.created", "task.running", "step.succeeded", "step.succeeded", "task.succeeded"],
    );
    const last = mine.at(-1)!;
    assert.equal(last.data.seq, last.id);
    assert.equal(last.data.type, "task.succeeded");
    assert.deepEqual(last.data.data, { status: "succeeded", output: { ok: true } });
    assert.match(last.data.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test("after a disconnect, Last-Event-ID resumes from the log with no gap and no duplicate, then goes live", async () => {
    const first = subscribe(stack);
    await first.opened;
    const a = await submit(stack, "sse.steps");
    await waitFor(() => first.received.some((r) => r.data.task_id === a && r.type === "task.running"));
    first.es.close();
    const lastId = first.received.at(-1)!.id;

    // Work that commits while nobody listens.
    const missed = [await submit(stack, "sse.steps"), await submit(stack, "sse.steps")];
    for (const id of [a, ...missed]) await ended(stack, id);

    const second = subscribe(stack, "", { lastEventId: lastId });
    await second.opened;
    const backlog = await logOf(stack, lastId);
    await waitFor(() => second.received.length >= backlog.length);
    const live = await submit(stack, "sse.steps");
    await ended(stack, live);
    const all = await logOf(stack, lastId);
    await waitFor(() => second.received.length >= all.length);
    await sleep(100);
    second.es.close();

    const seen = [...first.received, ...second.received].map((r) => [r.id, r.type]);
    const log = await logOf(stack, first.received[0]!.id - 1);
    assert.deepEqual(seen, log, "the two connections together saw the log exactly once, in order");
    assert.ok(second.received.some((r) => r.data.task_id === live));
  });

  test("the ?last_event_id= query resumes too, and ?task_id= replays one task from its first event", async () => {
    const a = await submit(stack, "sse.steps");
    const b = await submit(stack, "sse.steps");
    await ended(stack, a);
    await ended(stack, b);
    const sub = subscribe(stack, `?task_id=${a}`);
    await sub.opened;
    const expected = await logOf(stack, 0, a);
    await waitFor(() => sub.received.length >= expected.length);
    await sleep(100);
    sub.es.close();
    assert.deepEqual(
      sub.received.map((r) => [r.id, r.type]),
      expected,
    );
    assert.ok(sub.received.every((r) => r.data.task_id === a));

    const from = expected[1]![0] as number;
    const resumed = subscribe(stack, `?task_id=${a}&last_event_id=${from}`);
    await resumed.opened;
    await waitFor(() => resumed.received.length >= expected.length - 2);
    await sleep(100);
    resumed.es.close();
    assert.deepEqual(
      resumed.received.map((r) => [r.id, r.type]),
      expected.slice(2),
    );
  });

  test("another tenant's events never appear, and its task ids are 404", async () => {
    const otherKey = newApiKey();
    await stack.store.createTenant({ name: "other", keyHash: hashApiKey(otherKey) });
    const mine = subscribe(stack);
    const theirs = subscribe(stack, "", { key: otherKey });
    await Promise.all([mine.opened, theirs.opened]);
    const a = await submit(stack, "sse.steps");
    const b = await submit(stack, "sse.steps", otherKey);
    await ended(stack, a);
    await waitFor(() => theirs.received.some((r) => r.type === "task.succeeded"));
    await waitFor(() => mine.received.some((r) => r.data.task_id === a && r.type === "task.succeeded"));
    await sleep(100);
    mine.es.close();
    theirs.es.close();
    assert.ok(theirs.received.length > 0 && theirs.received.every((r) => r.data.task_id === b));
    assert.ok(mine.received.every((r) => r.data.task_id !== b));

    const peek = await fetch(`${stack.url}/v1/events?task_id=${a}`, {
      headers: { authorization: `Bearer ${otherKey}` },
    });
    assert.equal(peek.status, 404);
    assert.equal(((await peek.json()) as any).error.code, "TASK_NOT_FOUND");
  });

  test("bad requests are refused before the stream opens", async () => {
    const get = (path: string, headers: Record<string, string> = {}) =>
      fetch(stack.url + path, { headers: { authorization: `Bearer ${stack.key}`, ...headers } });
    assert.equal((await fetch(`${stack.url}/v1/events`)).status, 401);
    const bad = await get("/v1/events", { "last-event-id": "abc" });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as any).error.code, "VALIDATION_FAILED");
  });

  test("an idle stream gets heartbeat comments", async () => {
    const text = await rawStream(stack, "/v1/events", async (chunks) => {
      await waitFor(() => chunks.join("").includes(": ping\n\n"), 3000, "a heartbeat");
    });
    assert.match(text, /^retry: \d+\nid: \d+\n\n/, "the stream names its start position");
  });

  test("a reader that stops reading costs the server at most about one page, and gets everything when it resumes", async () => {
    const startSeq = (await logOf(stack)).at(-1)![0] as number;
    // A raw client that never reads: nothing consumes the response until it is resumed below.
    const req = http.get(`${stack.url}/v1/events`, { headers: { authorization: `Bearer ${stack.key}` } });
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      req.on("response", resolve);
      req.on("error", reject);
    });
    await waitFor(() => stack.app.server.eventStreams.stats().streams >= 1);

    const TASKS = 400;
    const ids = await Promise.all(Array.from({ length: TASKS }, () => submit(stack, "sse.big")));
    await waitFor(
      async () => {
        const events = await stack.store.taskEvents(stack.tenantId, startSeq, 100_000);
        return events.filter((e) => e.type === "task.succeeded").length >= ids.length;
      },
      60_000,
      "the big tasks to finish",
    );
    await sleep(300);
    const events = await stack.store.taskEvents(stack.tenantId, startSeq, 100_000);
    const logBytes = events.reduce((n, e) => n + sseFrame(e).length, 0);
    const stats = stack.app.server.eventStreams.stats();
    const CAP = 512 * 1024;
    assert.ok(logBytes > 20 * CAP, `the log grew by ${logBytes} bytes, enough to overflow any bound`);
    assert.ok(
      stats.peakBufferedBytes <= CAP,
      `at most ${CAP} bytes wait in user space (peak ${stats.peakBufferedBytes})`,
    );

    // Reading again, the client gets every event after its start, in order, exactly once.
    let text = "";
    res.setEncoding("utf8");
    res.on("data", (c: string) => {
      text += c;
    });
    res.resume();
    const lastSeq = events.at(-1)!.seq;
    await waitFor(() => text.includes(`id: ${lastSeq}\n`), 30_000, "the backlog to drain");
    req.destroy();
    // Every id line after the first, which only names where the stream started.
    const got = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])).slice(1);
    assert.deepEqual(
      got,
      events.map((e) => e.seq),
    );
    await waitFor(() => stack.app.server.eventStreams.stats().streams === 0, 5000, "the stream to close");
  });
});

describe("SqliteStore.onTaskEvents", () => {
  test("announces each appended event once, only after its commit, and never a rolled-back one", async () => {
    const tmp = tempDir();
    const path = join(tmp.dir, "events.db");
    const store = new SqliteStore({ path });
    await store.migrate();
    const tenant = await store.createTenant({ name: "t", keyHash: "h" });
    const reader = new Database(path, { readonly: true });
    const seen: { tenantId: string; seq: number; committed: boolean }[] = [];
    const off = store.onTaskEvents((tenantId, seq) => {
      // Another connection sees only committed rows.
      const committed = reader.prepare("SELECT 1 FROM task_events WHERE seq = ?").get(seq) !== undefined;
      seen.push({ tenantId, seq, committed });
    });
    try {
      const submit = (input: unknown) =>
        store.submitTask({
          tenantId: tenant.id,
          type: "x",
          input,
          clientRequestId: "same",
          userId: null,
          traceId: null,
        });
      const [ok, conflict] = await Promise.allSettled([submit({ a: 1 }), submit({ a: 2 })]);
      assert.equal(ok.status, "fulfilled");
      assert.equal(conflict.status, "rejected");
      await store.cancelTask(
        tenant.id,
        (ok as PromiseFulfilledResult<{ task: { id: string } }>).value.task.id,
      );
      const log = await store.taskEvents(tenant.id, 0, 100);
      assert.deepEqual(
        seen,
        log.map((e) => ({ tenantId: tenant.id, seq: e.seq, committed: true })),
      );
      assert.deepEqual(
        log.map((e) => e.type),
        ["task.created", "task.canceled"],
      );
      assert.equal(await store.lastTaskEventSeq(tenant.id), log.at(-1)!.seq);
      assert.equal(await store.lastTaskEventSeq("tn_nobody"), 0);
    } finally {
      off();
      reader.close();
      await store.close();
      tmp.cleanup();
    }
  });
});

/** Reads a stream with a raw client until `until` resolves; returns what arrived. */
async function rawStream(
  stack: Stack,
  path: string,
  until: (chunks: string[]) => Promise<void>,
): Promise<string> {
  const chunks: string[] = [];
  const req = http.get(`${stack.url}${path}`, { headers: { authorization: `Bearer ${stack.key}` } });
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    req.on("response", resolve);
    req.on("error", reject);
  });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers["content-type"]), /^text\/event-stream/);
  res.setEncoding("utf8");
  res.on("data", (c: string) => chunks.push(c));
  try {
    await until(chunks);
  } finally {
    req.destroy();
  }
  return chunks.join("");
}
