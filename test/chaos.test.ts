import assert from "node:assert/strict";
import { test } from "node:test";
import { waitFor } from "./helpers.ts";
import { startStack } from "./stack.ts";

const TASKS = 500;

test(`${TASKS} tasks with 30% duplicated, 20% reordered, 10% dropped webhooks and 10% failed creations all end correctly`, async () => {
  const stack = await startStack({
    chaos: { duplicate: 0.3, reorder: 0.2, drop: 0.1, failCreate: 0.1 },
    seed: 42,
    pollAfterMs: 500,
    concurrency: 32,
  });
  try {
    const submitted = await Promise.all(
      Array.from({ length: TASKS }, async (_, i) => {
        const fail = i % 10 === 7;
        const r = await stack.api("/v1/tasks", {
          body: {
            type: "demo.echo",
            input: { text: `c${i}`, fail, delay_ms: 20 + (i % 7) * 15 },
            client_request_id: `chaos-${i}`,
          },
        });
        assert.equal(r.status, 202);
        return { id: r.body.task_id as string, i, fail };
      }),
    );
    const ended = new Set(["succeeded", "failed", "canceled", "timed_out"]);
    await waitFor(
      () => {
        const row = stack.store.db
          .prepare(
            "SELECT count(*) AS n FROM tasks WHERE status IN ('succeeded', 'failed', 'canceled', 'timed_out')",
          )
          .get() as { n: number };
        return row.n === TASKS;
      },
      120_000,
      "every chaos task to end",
    );
    const stats = stack.sim.stats();
    assert.ok(
      stats.duplicated > 0 && stats.reordered > 0 && stats.dropped > 0 && stats.failedCreates > 0,
      JSON.stringify(stats),
    );

    for (const s of submitted) {
      const d = (await stack.store.getTask(stack.tenantId, s.id))!;
      assert.ok(ended.has(d.task.status));
      if (s.fail) {
        assert.equal(d.task.status, "failed", `task ${s.i} should fail`);
        assert.equal(d.task.error?.code, "model_error");
      } else {
        assert.equal(d.task.status, "succeeded", `task ${s.i}: ${JSON.stringify(d.task.error)}`);
        assert.deepEqual(d.task.output, { text: `c${s.i}` });
      }
      assert.equal(d.jobs.length, 1, `task ${s.i} has one job`);
      assert.equal(stats.createsByKey[`${s.id}:echo`], 1, `one external job for task ${s.i}`);
    }
    // Each event is applied once: per job and event type at most one applied inbox row,
    // and per task exactly one step outcome and one terminal task event.
    const twice = stack.store.db
      .prepare(
        `SELECT job_external_id, type, count(*) AS n FROM inbox_events WHERE status = 'applied'
          GROUP BY job_external_id, type HAVING n > 1`,
      )
      .all();
    assert.deepEqual(twice, []);
    const events = stack.store.db
      .prepare(
        `SELECT task_id, sum(type IN ('step.succeeded', 'step.failed')) AS steps,
                sum(type IN ('task.succeeded', 'task.failed')) AS ends
           FROM task_events GROUP BY task_id`,
      )
      .all() as { steps: number; ends: number }[];
    assert.equal(events.length, TASKS);
    assert.ok(events.every((e) => e.steps === 1 && e.ends === 1));
  } finally {
    await stack.close();
  }
});
