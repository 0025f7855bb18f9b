import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const ADMIN = "admin-secret-for-tests-0123456789abcdef";
let stack: Stack;
before(async () => {
  stack = await startStack({ adminKey: ADMIN });
});
after(() => stack.close());

const admin = async (path: string, init: { method?: string; key?: string } = {}) => {
  const r = await fetch(stack.url + path, {
    method: init.method ?? "GET",
    headers: { authorization: `Bearer ${init.key ?? ADMIN}` },
  });
  return { status: r.status, body: (await r.json()) as any };
};

test("the admin API refuses tenant keys and wrong keys", async () => {
  assert.equal((await admin("/v1/admin/events", { key: stack.key })).status, 401);
  assert.equal((await admin("/v1/admin/events", { key: "nope" })).status, 401);
  const none = await fetch(`${stack.url}/v1/admin/events`);
  assert.equal(none.status, 401);
});

test("the inbox lists events by source and status, and a replayed event keeps its effect exactly once", async () => {
  const r = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "inbox" } } });
  const task = await waitFor(async () => {
    const t = await stack.api(`/v1/tasks/${r.body.task_id}`);
    return t.body.status === "succeeded" ? t.body : null;
  });
  const listed = await admin("/v1/admin/events?source=sim&status=applied&limit=200");
  assert.equal(listed.status, 200);
  const mine = listed.body.data.filter((e: { job_id: string }) => e.job_id === task.jobs[0].job_id);
  assert.deepEqual(mine.map((e: { type: string }) => e.type).sort(), ["job.running", "job.succeeded"]);
  const succeeded = mine.find((e: { type: string }) => e.type === "job.succeeded");
  assert.match(succeeded.body, /"job.succeeded"/);

  const replay = await admin(`/v1/admin/events/${succeeded.id}/replay`, { method: "POST" });
  assert.equal(replay.status, 202);
  await waitFor(async () => {
    const e = await admin(`/v1/admin/events?source=sim&status=ignored&limit=200`);
    return e.body.data.some((x: { id: string }) => x.id === succeeded.id);
  });
  const events = await stack.store.taskEvents(stack.tenantId, 0, 100, task.task_id);
  assert.equal(events.filter((e) => e.type === "step.succeeded").length, 1);

  assert.equal(
    (await admin("/v1/admin/events/evt_missing/replay", { method: "POST" })).body.error.code,
    "EVENT_NOT_FOUND",
  );
  assert.equal((await admin("/v1/admin/events?status=bogus")).status, 400);
});
