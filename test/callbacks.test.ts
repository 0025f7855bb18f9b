import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { defineTask } from "../src/core/task-type.ts";
import { tempDir } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";
import { end, get, submit, waitingStep } from "./task-waits.ts";

const post = async (url: string, body: string) => {
  const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  const text = await r.text();
  return { status: r.status, body: text.startsWith("{") ? JSON.parse(text) : text };
};
/** A JSON body of about `kb` kilobytes. */
const bigBody = (kb: number, tag: string) => JSON.stringify({ tag, pad: "x".repeat(kb * 1024) });

const callbackTask = defineTask("test.cb", async (_input, step) =>
  step.callback<unknown>("cb", { timeout: "1h" }),
);

describe("callback retries and refused calls over HTTP", () => {
  const tmp = tempDir();
  const dbPath = join(tmp.dir, "callbacks.db");
  let stack: Stack;
  before(async () => {
    stack = await startStack({ dbPath, taskTypes: [callbackTask] });
  });
  after(async () => {
    await stack.close();
    tmp.cleanup();
  });
  /** Bytes of callback bodies and late results the SQLite file holds for `taskId`. */
  const storedBytes = (taskId: string) => {
    const db = new Database(dbPath, { readonly: true });
    try {
      const inbox = db
        .prepare(
          "SELECT COALESCE(SUM(length(body)), 0) AS n, COUNT(*) AS rows FROM inbox_events WHERE source = 'callback' AND event_id LIKE ?",
        )
        .get(`${taskId}:%`) as { n: number; rows: number };
      const late = db
        .prepare("SELECT COALESCE(length(late_output), 0) AS n FROM steps WHERE task_id = ?")
        .get(taskId) as { n: number };
      return { inbox: inbox.n, inboxRows: inbox.rows, late: late.n };
    } finally {
      db.close();
    }
  };

  test("the same callback body sent again answers 200 duplicate; a different body stays 409 TOKEN_USED", async () => {
    const id = await submit(stack, "test.cb");
    const step = await waitingStep(stack, id, "cb");
    const body = JSON.stringify({ pages: 12 });
    const first = await post(step.callback_url, body);
    assert.deepEqual(first, { status: 200, body: { accepted: true, task_id: id, step_id: "cb" } });
    const retry = await post(step.callback_url, body);
    assert.deepEqual(retry, {
      status: 200,
      body: { accepted: true, task_id: id, step_id: "cb", duplicate: true },
    });
    // Same JSON, other bytes: compared by the raw body, so not the same call.
    const respaced = await post(step.callback_url, JSON.stringify({ pages: 12 }, null, 1));
    assert.equal(respaced.status, 409);
    assert.equal(respaced.body.error.code, "TOKEN_USED");
    const other = await post(step.callback_url, JSON.stringify({ pages: 13 }));
    assert.equal(other.status, 409);
    assert.equal(other.body.error.code, "TOKEN_USED");
    const t = await end(stack, id);
    assert.deepEqual(t.output, { pages: 12 }, "the first body is the result");
    assert.equal((await post(step.callback_url, body)).status, 200, "still a duplicate once the task ended");
  });

  test("a callback URL with its last character changed is 401 TOKEN_INVALID; one cut short is TOKEN_MALFORMED", async () => {
    const id = await submit(stack, "test.cb");
    const step = await waitingStep(stack, id, "cb");
    const url: string = step.callback_url;
    const changed = `${url.slice(0, -1)}${url.endsWith("A") ? "B" : "A"}`;
    const altered = await post(changed, JSON.stringify({ ok: true }));
    assert.equal(altered.status, 401);
    assert.equal(altered.body.error.code, "TOKEN_INVALID");
    assert.doesNotMatch(altered.body.error.message, /cut short/);
    const cut = await post(url.slice(0, -4), JSON.stringify({ ok: true }));
    assert.equal(cut.status, 401);
    assert.equal(cut.body.error.code, "TOKEN_MALFORMED");
    assert.match(cut.body.error.message, /cut short/);
    // Neither touched the wait: the link itself still completes it.
    assert.equal((await post(url, JSON.stringify({ ok: true }))).status, 200);
  });

  test("refused calls with 500 KB bodies to a used link keep no copy of their bodies", async () => {
    const id = await submit(stack, "test.cb");
    const step = await waitingStep(stack, id, "cb");
    assert.equal((await post(step.callback_url, JSON.stringify({ ok: true }))).status, 200);
    const before = storedBytes(id);
    for (let i = 0; i < 6; i++) {
      const r = await post(step.callback_url, bigBody(500, `used-${i}`));
      assert.equal(r.status, 409);
      assert.equal(r.body.error.code, "TOKEN_USED");
    }
    const afterCalls = storedBytes(id);
    assert.equal(afterCalls.inboxRows, before.inboxRows + 6, "every call is still recorded");
    assert.equal(afterCalls.inbox, before.inbox, "but not its body");
    assert.equal(afterCalls.late, 0);
  });

  test("late calls with 500 KB bodies keep only a hash and size; the answers stay 410", async () => {
    const id = await submit(stack, "demo.callback", { timeout_s: 0.3 });
    const step = await waitingStep(stack, id, "callback");
    assert.equal((await end(stack, id)).status, "timed_out");
    for (let i = 0; i < 6; i++) {
      const r = await post(step.callback_url, bigBody(500, `late-${i}`));
      assert.equal(r.status, 410);
      assert.equal(r.body.error.code, "TOKEN_EXPIRED");
    }
    const bytes = storedBytes(id);
    assert.equal(bytes.inbox, 0, "no late body is in the inbox");
    assert.ok(bytes.late < 1024, `the late result holds ${bytes.late} bytes`);
    const late = (await get(stack, id)).steps[0].late_result;
    assert.equal(late.output, undefined, "a body over 64 KB is not kept");
    assert.match(late.sha256, /^[0-9a-f]{64}$/);
    assert.equal(late.size, bigBody(500, "late-0").length);
    assert.ok(late.received_at);
  });

  test("a small late result is kept once: later late calls do not replace it", async () => {
    const id = await submit(stack, "demo.callback", { timeout_s: 0.3 });
    const step = await waitingStep(stack, id, "callback");
    await end(stack, id);
    assert.equal((await post(step.callback_url, JSON.stringify({ n: 1 }))).status, 410);
    assert.equal((await post(step.callback_url, JSON.stringify({ n: 2 }))).status, 410);
    const late = (await get(stack, id)).steps[0].late_result;
    assert.deepEqual(late.output, { n: 1 });
    assert.equal(late.size, JSON.stringify({ n: 1 }).length);
    assert.equal(storedBytes(id).inbox, 0);
  });
});
