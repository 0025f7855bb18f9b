import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { z } from "zod";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask, task } from "../src/core/task-type.ts";
import { type Stack, startStack } from "./stack.ts";

// `POST /v1/tasks/batch` (issue #34) over real HTTP on a SQLite file: all or nothing, in order,
// idempotent per item, counted against the tenant's quotas item by item.

const sum = task({
  id: "batch.sum",
  schema: z.object({ x: z.number() }),
  run: async (input) => input.x,
});

/** A type without a schema: its input is stored as given, file references and all. */
const any = defineTask("batch.any", async () => null);

const items = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ type: "batch.sum", input: { x: from + i } }));

describe("submitting a batch", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ taskTypes: [sum, any], concurrency: 1 });
  });
  after(() => stack.close());

  /** How many tasks a tenant has, whatever their status. */
  const taskCount = async (tenantId: string) => {
    const usage = await stack.store.usage(tenantId, 1);
    return Object.values(usage?.tasksByStatus ?? {}).reduce((a: number, n) => a + Number(n), 0);
  };

  const tenantWith = async (name: string, quotas: Record<string, number> = {}) => {
    const key = newApiKey();
    const t = await stack.store.createTenant({ name, keyHash: hashApiKey(key) });
    if (Object.keys(quotas).length > 0) await stack.store.updateTenant(t.id, { quotas });
    const call = (body: unknown) =>
      stack.api("/v1/tasks/batch", { body, headers: { authorization: `Bearer ${key}` } });
    return { id: t.id, call };
  };

  test("answers each task in the order given, and stores each input", async () => {
    const r = await stack.api("/v1/tasks/batch", { body: { tasks: items(5, 10) } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(r.body.tasks.length, 5);
    for (const [i, t] of r.body.tasks.entries()) {
      assert.equal(t.created, true);
      assert.equal(t.status, "pending");
      const got = await stack.api(`/v1/tasks/${t.task_id}`);
      assert.deepEqual(got.body.input, { x: 10 + i });
    }
  });

  test("accepts 1,000 tasks in one request, and refuses 1,001 or none", async () => {
    const t = await tenantWith("thousand");
    const r = await t.call({ tasks: items(1000) });
    assert.equal(r.status, 202, JSON.stringify(r.body).slice(0, 500));
    assert.equal(r.body.tasks.length, 1000);
    assert.equal(new Set(r.body.tasks.map((x: { task_id: string }) => x.task_id)).size, 1000);
    assert.equal(await taskCount(t.id), 1000);
    assert.equal((await t.call({ tasks: items(1001) })).status, 400);
    assert.equal((await t.call({ tasks: [] })).status, 400);
    assert.equal(await taskCount(t.id), 1000);
  });

  test("one bad item refuses the whole batch, naming its index; nothing is stored", async () => {
    const t = await tenantWith("bad-item");
    const bad = items(10);
    bad[7] = { type: "batch.sum", input: { x: "seven" } } as never;
    const r = await t.call({ tasks: bad });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, "VALIDATION_FAILED");
    assert.equal(r.body.error.param, "tasks[7].input.x");
    assert.equal(await taskCount(t.id), 0);

    const unknown = items(3);
    unknown[2] = { type: "no.such.type", input: {} } as never;
    const u = await t.call({ tasks: unknown });
    assert.equal(u.status, 400);
    assert.equal(u.body.error.param, "tasks[2].type");
    assert.match(u.body.error.message, /TASK_TYPE_UNKNOWN|no\.such\.type/);

    const file = items(3);
    file[1] = { type: "batch.any", input: { doc: { file_id: "file_missing" } } } as never;
    const f = await t.call({ tasks: file });
    assert.equal(f.status, 400);
    assert.equal(f.body.error.param, "tasks[1].input.doc.file_id");
    assert.equal(await taskCount(t.id), 0);
  });

  test("a client_request_id twice in one batch is refused; one used before answers its task", async () => {
    const t = await tenantWith("idempotent");
    const twice = await t.call({
      tasks: [
        { type: "batch.sum", input: { x: 1 }, client_request_id: "a" },
        { type: "batch.sum", input: { x: 1 }, client_request_id: "a" },
      ],
    });
    assert.equal(twice.status, 400);
    assert.equal(twice.body.error.param, "tasks[1].client_request_id");
    assert.equal(await taskCount(t.id), 0);

    const first = await t.call({ tasks: [{ type: "batch.sum", input: { x: 1 }, client_request_id: "a" }] });
    assert.equal(first.status, 202);
    const again = await t.call({
      tasks: [
        { type: "batch.sum", input: { x: 2 }, client_request_id: "b" },
        { type: "batch.sum", input: { x: 1 }, client_request_id: "a" },
      ],
    });
    assert.equal(again.status, 202);
    assert.equal(again.body.tasks[0].created, true);
    assert.equal(again.body.tasks[1].created, false);
    assert.equal(again.body.tasks[1].task_id, first.body.tasks[0].task_id);
    assert.equal(await taskCount(t.id), 2);
  });

  test("over the daily quota the whole batch is refused; another tenant's batch passes", async () => {
    const t = await tenantWith("daily", { tasks_per_day: 5 });
    assert.equal((await t.call({ tasks: items(3) })).status, 202);
    const over = await t.call({ tasks: items(3) });
    assert.equal(over.status, 429);
    assert.equal(over.body.error.code, "QUOTA_EXCEEDED");
    assert.equal(await taskCount(t.id), 3, "none of the refused batch is stored");
    assert.equal((await t.call({ tasks: items(2) })).status, 202, "the room left is still there");

    const other = await tenantWith("other");
    const r = await other.call({ tasks: items(6) });
    assert.equal(r.status, 202);
    assert.equal(await taskCount(other.id), 6);
  });

  test("a batch counts each item against the submit rate", async () => {
    // A rate of 2 per second bursts to 4: a batch of 5 can never pass, one of 4 passes once.
    const t = await tenantWith("rate", { submit_rate_per_s: 2 });
    const big = await t.call({ tasks: items(5) });
    assert.equal(big.status, 429);
    assert.equal(big.body.error.code, "RATE_LIMITED");
    assert.equal((await t.call({ tasks: items(4) })).status, 202);
    assert.equal(await taskCount(t.id), 4);
  });

  test("the embedded call submits a batch as the route does", async () => {
    const r = await stack.app.submitBatch(stack.tenantId, { tasks: items(2, 100) });
    assert.deepEqual(
      r.tasks.map((x) => x.created),
      [true, true],
    );
    await assert.rejects(
      stack.app.submitBatch(stack.tenantId, {
        tasks: [
          { type: "batch.sum", input: { x: 1 } },
          { type: "batch.sum", input: {} },
        ],
      }),
      (e: { code?: string; param?: string }) =>
        e.code === "VALIDATION_FAILED" && e.param === "tasks[1].input.x",
    );
  });
});
