import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const CONCURRENCY = 8;
const BACKLOG = 2000;

describe("fairness across tenants over HTTP", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ concurrency: CONCURRENCY });
  });
  after(() => stack.close());

  test(`a tenant's one task starts before 2× the worker's concurrency of another tenant's ${BACKLOG} queued tasks`, async () => {
    // Tenant A's backlog goes in straight through the store, faster than the worker drains it.
    const a = stack.tenantId;
    await Promise.all(
      Array.from({ length: BACKLOG }, (_, i) =>
        stack.store.submitTask({
          tenantId: a,
          type: "demo.echo",
          input: { text: `a${i}` },
          clientRequestId: null,
          userId: null,
          traceId: null,
        }),
      ),
    );
    const bKey = newApiKey();
    const b = await stack.store.createTenant({ name: "b", keyHash: hashApiKey(bKey) });
    const r = await fetch(`${stack.url}/v1/tasks`, {
      method: "POST",
      headers: { authorization: `Bearer ${bKey}`, "content-type": "application/json" },
      body: JSON.stringify({ type: "demo.echo", input: { text: "b" } }),
    });
    assert.equal(r.status, 202);
    const bTask = ((await r.json()) as { task_id: string }).task_id;
    const bEvents = await waitFor(
      async () => {
        const evs = await stack.store.taskEvents(b.id, 0, 10, bTask);
        return evs.some((e) => e.type === "task.running") ? evs : null;
      },
      60_000,
      "tenant B's task to start",
    );
    const created = bEvents.find((e) => e.type === "task.created")!.seq;
    const started = bEvents.find((e) => e.type === "task.running")!.seq;
    // A's tasks that started while B's waited: between B's submission and B's start.
    let startedOfA = 0;
    for (let after = created; ; ) {
      const page = await stack.store.taskEvents(a, after, 1000);
      const inWindow = page.filter((e) => e.seq < started);
      startedOfA += inWindow.filter((e) => e.type === "task.running").length;
      if (page.length < 1000 || inWindow.length < page.length) break;
      after = page.at(-1)!.seq;
    }
    const left = (await stack.api("/v1/tasks?status=pending&limit=1")).body.data.length;
    assert.equal(left, 1, "A still had a backlog when B's task started");
    assert.ok(
      startedOfA < 2 * CONCURRENCY,
      `${startedOfA} of A's tasks started while B's waited (limit ${2 * CONCURRENCY})`,
    );
  });
});
