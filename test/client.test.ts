import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  LonghaulClient,
  LonghaulClientError,
  type SseMessage,
  SseParser,
  type TaskEvent,
} from "../src/client/index.ts";
import { defineTask } from "../src/core/task-type.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const twoSteps = defineTask("client.steps", async (_input: unknown, step) => {
  await step.run("a", () => 1);
  await step.run("b", () => 2);
  return { ok: true };
});
const awaitSignal = defineTask("client.signal", async (_input: unknown, step) => {
  const got = await step.waitForEvent<{ n: number }>("go", { match: { event: "client.go" } });
  return { got: got?.data ?? null };
});

const ended = (s: string) => ["succeeded", "failed", "canceled", "timed_out"].includes(s);

describe("LonghaulClient against a real server", () => {
  let stack: Stack;
  let client: LonghaulClient;
  before(async () => {
    stack = await startStack({ taskTypes: [twoSteps, awaitSignal], realtime: { heartbeatMs: 200 } });
    client = new LonghaulClient({ baseUrl: stack.url, apiKey: stack.key, reconnect: { initialMs: 50 } });
  });
  after(() => stack.close());

  const finish = (id: string) =>
    waitFor(async () => {
      const t = await client.get(id);
      return ended(t.status) ? t : null;
    }, 15_000);

  test("submit, get and list, with idempotent submits", async () => {
    const s = await client.submit(
      "demo.echo",
      { text: "hi" },
      { clientRequestId: "c-1", userId: "u-1", traceId: "tr-1" },
    );
    assert.equal(s.created, true);
    assert.equal(s.status, "pending");
    const again = await client.submit("demo.echo", { text: "hi" }, { clientRequestId: "c-1" });
    assert.deepEqual([again.task_id, again.created], [s.task_id, false]);
    const t = await finish(s.task_id);
    assert.equal(t.status, "succeeded");
    assert.deepEqual(t.output, { text: "hi" });
    assert.equal(t.user_id, "u-1");
    assert.equal(t.trace_id, "tr-1");
    assert.equal(t.jobs[0]?.provider, "sim");

    await client.submit("demo.echo", { text: "two" });
    const page = await client.list({ type: "demo.echo", limit: 1 });
    assert.equal(page.data.length, 1);
    assert.ok(page.next_cursor);
    const next = await client.list({ type: "demo.echo", limit: 1, cursor: page.next_cursor! });
    assert.ok(next.data[0]!.task_id < page.data[0]!.task_id);
    const done = await client.list({ status: "succeeded" });
    assert.ok(done.data.every((x) => x.status === "succeeded"));
  });

  test("API errors arrive as LonghaulClientError with status and code", async () => {
    await assert.rejects(client.get("t_missing"), (e: unknown) => {
      assert.ok(e instanceof LonghaulClientError);
      assert.equal(e.status, 404);
      assert.equal(e.code, "TASK_NOT_FOUND");
      assert.match(e.message, /t_missing/);
      return true;
    });
    await assert.rejects(client.submit("no.such.type", {}), { status: 422, code: "TASK_TYPE_UNKNOWN" });
    const stranger = new LonghaulClient({ baseUrl: stack.url, apiKey: "lh_wrong" });
    await assert.rejects(stranger.list(), { status: 401, code: "UNAUTHORIZED" });
    await assert.rejects(stranger.subscribe().next(), { status: 401, code: "UNAUTHORIZED" });
    const nowhere = new LonghaulClient({ baseUrl: "http://127.0.0.1:9", apiKey: "k" });
    await assert.rejects(nowhere.list(), { status: 0, code: "NETWORK_ERROR" });
  });

  test("submitBatch submits tasks in order, all or nothing", async () => {
    const made = await client.submitBatch([
      { type: "demo.echo", input: { text: "one" }, clientRequestId: "batch-1" },
      { type: "demo.echo", input: { text: "two" } },
    ]);
    assert.equal(made.tasks.length, 2);
    assert.ok(made.tasks.every((t) => t.created));
    assert.deepEqual((await client.get(made.tasks[1]!.task_id)).input, { text: "two" });
    await assert.rejects(
      client.submitBatch([
        { type: "demo.echo", input: { text: "three" } },
        { type: "no.such.type", input: {} },
      ]),
      { status: 400, code: "VALIDATION_FAILED" },
    );
    const again = await client.submitBatch([
      { type: "demo.echo", input: { text: "one" }, clientRequestId: "batch-1" },
    ]);
    assert.deepEqual(again.tasks[0], { ...made.tasks[0]!, status: again.tasks[0]!.status, created: false });
  });

  test("cancel", async () => {
    const s = await client.submit("demo.echo", { text: "slow", delay_ms: 60_000 });
    const c = await client.cancel(s.task_id);
    assert.deepEqual(c, { task_id: s.task_id, status: "canceled" });
    await assert.rejects(client.cancel("t_missing"), { status: 404, code: "TASK_NOT_FOUND" });
  });

  test("approve and reject through the step's links, callback and signal", async () => {
    const a = await client.submit("demo.approval", {});
    const waiting = await waitFor(async () => {
      const t = await client.get(a.task_id);
      return t.steps[0]?.status === "waiting" ? t.steps[0] : null;
    });
    const ok = await client.approve(waiting.approval_url!, { comment: "ship it", approver: "ana" });
    assert.equal(ok.decision, "approve");
    const approved = await finish(a.task_id);
    assert.deepEqual(approved.output, { approved: true, by: null, claimed_by: "ana", comment: "ship it" });
    await assert.rejects(client.approve(waiting.approval_url!), { status: 409, code: "TOKEN_USED" });

    const r = await client.submit("demo.approval", {});
    const step = await waitFor(async () => {
      const t = await client.get(r.task_id);
      return t.steps[0]?.status === "waiting" ? t.steps[0] : null;
    });
    await client.reject(step.approvals![0]!.reject_url, { comment: "no" });
    assert.equal(((await finish(r.task_id)).output as { approved: boolean }).approved, false);

    const cb = await client.submit("demo.callback", {});
    const cbStep = await waitFor(async () => {
      const t = await client.get(cb.task_id);
      return t.steps[0]?.callback_url ? t.steps[0] : null;
    });
    await client.callback(cbStep.callback_url!, { pages: 200 });
    assert.deepEqual((await finish(cb.task_id)).output, { pages: 200 });

    const sg = await client.submit("client.signal", {});
    await waitFor(async () => (await client.get(sg.task_id)).status === "waiting");
    const sent = await client.signal("client.go", { n: 7 }, { id: "sig-1" });
    assert.equal(sent.matched, 1);
    assert.equal((await client.signal("client.go", { n: 7 }, { id: "sig-1" })).duplicate, true);
    assert.deepEqual((await finish(sg.task_id)).output, { got: { n: 7 } });
  });

  test("subscribe yields every event once across a dropped connection, resuming with Last-Event-ID", async () => {
    // A fetch whose first event stream breaks right after its first event.
    const lastEventIds: (string | null)[] = [];
    let streams = 0;
    const flaky: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (!String(input).includes("/v1/events")) return res;
      lastEventIds.push(new Headers(init?.headers).get("last-event-id"));
      if (++streams > 1) return res;
      const reader = res.body!.getReader();
      let text = "";
      const cut = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done) return controller.close();
          text += new TextDecoder().decode(value);
          const first = text.indexOf("\n\n", text.indexOf("\nevent: "));
          if (text.includes("\nevent: ") && first !== -1) {
            controller.enqueue(new TextEncoder().encode(text.slice(0, first + 2)));
            await reader.cancel();
            controller.error(new TypeError("connection reset"));
          }
        },
      });
      return new Response(cut, { status: res.status, headers: res.headers });
    };
    const sub = new LonghaulClient({
      baseUrl: stack.url,
      apiKey: stack.key,
      fetch: flaky,
      reconnect: { initialMs: 50 },
    });
    const s = await sub.submit("client.steps", {});
    await finish(s.task_id);
    const log = await stack.store.taskEvents(stack.tenantId, 0, 1000, s.task_id);

    const stop = new AbortController();
    const got: TaskEvent[] = [];
    for await (const e of sub.subscribe({ taskId: s.task_id, signal: stop.signal })) {
      got.push(e);
      if (got.length === log.length) stop.abort();
    }
    assert.deepEqual(
      got.map((e) => [e.seq, e.type]),
      log.map((e) => [e.seq, e.type]),
    );
    assert.equal(streams, 2, "one reconnect");
    assert.deepEqual(lastEventIds, [null, String(log[0]!.seq)]);
    assert.equal(got[0]!.task_id, s.task_id);
  });

  test("a stream dropped before its first event still resumes where it started", async () => {
    const lastEventIds: (string | null)[] = [];
    let cut = false;
    const dropsAtOnce: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (!String(input).includes("/v1/events")) return res;
      lastEventIds.push(new Headers(init?.headers).get("last-event-id"));
      if (lastEventIds.length > 1) return res;
      const reader = res.body!.getReader();
      let pulls = 0;
      return new Response(
        new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (pulls++ === 0) {
              // The head of the stream (its `retry` and start `id`), then nothing but an error.
              const { value } = await reader.read();
              return controller.enqueue(value!);
            }
            await reader.cancel();
            cut = true;
            controller.error(new TypeError("connection reset"));
          },
        }),
        { status: res.status, headers: res.headers },
      );
    };
    const sub = new LonghaulClient({
      baseUrl: stack.url,
      apiKey: stack.key,
      fetch: dropsAtOnce,
      reconnect: { initialMs: 400 },
    });
    const it = sub.subscribe();
    const first = it.next();
    await waitFor(() => cut);
    // Committed while the client waits to reconnect.
    const s = await client.submit("client.steps", {});
    const e = await first;
    await it.return?.();
    assert.equal(e.value?.task_id, s.task_id);
    assert.equal(e.value?.type, "task.created");
    assert.equal(lastEventIds.length, 2);
    assert.match(String(lastEventIds[1]), /^\d+$/);
  });

  test("subscribe continues live, and stops when the loop breaks", async () => {
    const it = client.subscribe();
    const first = it.next();
    await waitFor(() => stack.app.server.eventStreams.stats().streams >= 1);
    const s = await client.submit("client.steps", {});
    const e = await first;
    assert.equal(e.done, false);
    assert.equal(e.value?.task_id, s.task_id);
    assert.equal(e.value?.type, "task.created");
    await it.return?.();
    await waitFor(() => stack.app.server.eventStreams.stats().streams === 0, 5000, "the stream to close");
  });
});

describe("SseParser", () => {
  const all = (chunks: string[]) => {
    const p = new SseParser();
    const out: SseMessage[] = [];
    for (const c of chunks) out.push(...p.push(c));
    return { out, p };
  };

  test("joins data lines, carries ids, names events and skips comments", () => {
    const { out, p } = all([
      ": hello\n",
      'retry: 1500\nid: 7\nevent: task.created\ndata: {"a":\ndata: 1}\n\n',
      "data: x\n\n",
    ]);
    assert.deepEqual(out, [
      { event: "task.created", data: '{"a":\n1}', id: "7" },
      { event: "message", data: "x", id: "7" },
    ]);
    assert.equal(p.retry, 1500);
  });

  test("accepts CRLF, CR and LF endings, even split across chunks", () => {
    const text = "id: 1\r\ndata: a\r\n\r\nid: 2\rdata: b\r\rid: 3\ndata:c\n\n";
    const whole = all([text]).out;
    assert.deepEqual(
      whole.map((m) => [m.id, m.data]),
      [
        ["1", "a"],
        ["2", "b"],
        ["3", "c"],
      ],
    );
    for (let i = 1; i < text.length; i++) {
      assert.deepEqual(all([text.slice(0, i), text.slice(i)]).out, whole, `split at ${i}`);
    }
  });

  test("ignores bad retry and NUL ids, drops events with no data and a cut-off last event", () => {
    const { out, p } = all(["\uFEFFretry: 1s\nid: a\u0000b\nevent: x\n\nid: 4\n\ndata: keep\n\ndata: lost"]);
    assert.equal(p.retry, null);
    assert.deepEqual(out, [{ event: "message", data: "keep", id: "4" }]);
  });

  test("an id counts only when its event completes, even one without data", () => {
    const p = new SseParser();
    assert.deepEqual(p.push("retry: 10\nid: 3\n\n"), []);
    assert.equal(p.lastEventId, "3");
    p.push("id: 9\ndata: cut");
    assert.equal(p.lastEventId, "3", "a stream cut inside an event resumes before it");
    assert.deepEqual(p.push("\n\n"), [{ event: "message", data: "cut", id: "9" }]);
    assert.equal(p.lastEventId, "9");
  });

  test("decodes UTF-8 split inside a character", () => {
    const bytes = new TextEncoder().encode("data: héllo ✓\n\n");
    const p = new SseParser();
    const out = [
      ...p.push(bytes.subarray(0, 8)),
      ...p.push(bytes.subarray(8, 15)),
      ...p.push(bytes.subarray(15)),
    ];
    assert.deepEqual(out, [{ event: "message", data: "héllo ✓", id: "" }]);
  });
});
