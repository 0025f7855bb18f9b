import assert from "node:assert/strict";
import { test } from "node:test";
import { waitFor } from "./helpers.ts";
import { startStack } from "./stack.ts";

test("with every webhook dropped, the reconciler polls the provider and tasks still complete", async () => {
  const stack = await startStack({ chaos: { drop: 1 }, pollAfterMs: 200 });
  try {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await stack.api("/v1/tasks", {
        body: { type: "demo.echo", input: { text: `p${i}`, fail: i === 4 } },
      });
      ids.push(r.body.task_id);
    }
    const tasks = await waitFor(
      async () => {
        const all = await Promise.all(ids.map((id) => stack.api(`/v1/tasks/${id}`)));
        return all.every((t) => ["succeeded", "failed"].includes(t.body.status))
          ? all.map((t) => t.body)
          : null;
      },
      20_000,
      "polled tasks to end",
    );
    assert.deepEqual(
      tasks.map((t) => t.status),
      ["succeeded", "succeeded", "succeeded", "succeeded", "failed"],
    );
    assert.deepEqual(tasks[0].output, { text: "p0" });
    assert.equal(tasks[4].error.code, "model_error");
    assert.ok(stack.sim.stats().dropped >= 10, "the simulator dropped the webhooks");
    const rows = stack.store.db
      .prepare(
        "SELECT source, event_id, status FROM inbox_events WHERE source = 'poll' AND status = 'applied'",
      )
      .all() as { event_id: string }[];
    assert.ok(rows.some((r) => r.event_id.endsWith(":succeeded")));
    // Ended jobs leave no poll behind.
    await waitFor(() => {
      const n = stack.store.db.prepare("SELECT count(*) AS n FROM work_items WHERE kind = 'poll'").get() as {
        n: number;
      };
      return n.n === 0;
    });
  } finally {
    await stack.close();
  }
});

test("a webhook that arrives after a poll reported the same state is recorded and applied once", async () => {
  // Webhooks are delayed 800 ms; the poll at ~100 ms finds the job already done.
  const stack = await startStack({ pollAfterMs: 100, chaos: { delayMs: [800, 800] } });
  try {
    const r = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "race" } } });
    const t = await waitFor(async () => {
      const x = await stack.api(`/v1/tasks/${r.body.task_id}`);
      return x.body.status === "succeeded" ? x.body : null;
    });
    assert.deepEqual(t.output, { text: "race" });
    const jobId = t.jobs[0].job_id;
    const rows = await waitFor(() => {
      const all = stack.store.db
        .prepare(
          "SELECT source, type, status FROM inbox_events WHERE job_external_id = ? AND type = 'job.succeeded'",
        )
        .all(jobId) as { source: string; type: string; status: string }[];
      return all.length === 2 ? all : null;
    });
    assert.deepEqual(rows.map((x) => [x.source, x.status]).sort(), [
      ["poll", "applied"],
      ["sim", "ignored"],
    ]);
    const events = await stack.store.taskEvents(stack.tenantId, 0, 100, t.task_id);
    assert.equal(events.filter((e) => e.type === "step.succeeded").length, 1);
  } finally {
    await stack.close();
  }
});
