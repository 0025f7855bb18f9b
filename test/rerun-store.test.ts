import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { ManualClock } from "../src/core/clock.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { storedRef } from "../src/core/payload.ts";
import { Registry } from "../src/core/registry.ts";
import { defineTask, type TaskType } from "../src/core/task-type.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Lease, Store } from "../src/store/store.ts";
import { rerunTask } from "../src/usecases/rerun-task.ts";
import { rerunTasks } from "../src/usecases/rerun-tasks.ts";
import { tempDir } from "./helpers.ts";
import { pgAvailableOrReport, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";

// The store's half of a re-run (ARCHITECTURE §4.4), on a SQLite file and on PostgreSQL: the new
// task, the steps and artifacts it reuses, and its idempotency.

type Open = (clock: ManualClock) => Promise<Store>;

const rejectsCode = (p: Promise<unknown>, code: string) =>
  assert.rejects(p, (e: unknown) => e instanceof LonghaulError && e.code === code);

function rerunContract(name: string, open: Open): void {
  const setup = async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const store = await open(clock);
    const tenant = await store.createTenant({ name: "acme", keyHash: `hash-acme-${Math.random()}` });
    const other = await store.createTenant({ name: "other", keyHash: `hash-other-${Math.random()}` });
    return { clock, store, tenant, other };
  };

  /**
   * A task that ran `run` (a step.run), `art` (an artifact) and `job` (succeeded, its outcome
   * stored as a job's is), then failed at `bad`, with a later `after` step that succeeded (a
   * step that ran alongside): only the steps before `bad` are reused.
   */
  const failedTask = async (store: Store, tenantId: string, input: unknown = { text: "hi" }) => {
    const { task } = await store.submitTask({
      tenantId,
      type: "demo.steps",
      input,
      clientRequestId: null,
      userId: "u-1",
      traceId: "tr-1",
    });
    const [item] = await store.claim("w", 1, 30_000);
    assert.ok(item);
    const lease: Lease = { itemId: item.id, owner: "w" };
    assert.equal(await store.beginAdvance(lease, task.id), "started");
    await store.storeRunOutcome(lease, task.id, {
      stepId: "run",
      position: 0,
      status: "succeeded",
      output: { n: 1 },
      attempts: 2,
    });
    await store.storeArtifact(
      lease,
      { stepId: "artifact:report", position: 1, attempts: 1 },
      {
        taskId: task.id,
        tenantId,
        name: "report",
        contentType: "text/plain",
        size: 5,
        sha256: "a".repeat(64),
        blobKey: `artifacts/${tenantId}/${task.id}/w1`,
        createdAt: 1,
      },
    );
    await store.storeRunOutcome(lease, task.id, {
      stepId: "bad",
      position: 2,
      status: "failed",
      error: { code: "NON_RETRIABLE", message: "no" },
      attempts: 1,
    });
    await store.storeRunOutcome(lease, task.id, {
      stepId: "after",
      position: 3,
      status: "succeeded",
      output: "late",
      attempts: 1,
    });
    await store.finishAdvance(lease, task.id, {
      kind: "failed",
      error: { code: "NON_RETRIABLE", message: "no" },
    });
    return task;
  };

  describe(`${name}: re-runs`, () => {
    test("from the failed step: a new pending task with the steps before it and their artifacts", async () => {
      const { store, tenant } = await setup();
      const old = await failedTask(store, tenant.id);
      const r = await store.rerunTask({
        tenantId: tenant.id,
        taskId: old.id,
        from: "failed_step",
        clientRequestId: null,
      });
      assert.equal(r.created, true);
      assert.equal(r.reusedSteps, 2);
      assert.notEqual(r.task.id, old.id);
      assert.equal(r.task.status, "pending");
      assert.equal(r.task.rerunOf, old.id);
      assert.equal(r.task.type, "demo.steps");
      assert.equal(r.task.userId, "u-1");
      assert.equal(r.task.traceId, "tr-1");
      assert.deepEqual(r.task.input, { text: "hi" });
      const detail = (await store.getTask(tenant.id, r.task.id))!;
      assert.deepEqual(
        detail.steps.map((s) => [s.stepId, s.position, s.status, s.output, s.attempts]),
        [
          ["run", 0, "succeeded", { n: 1 }, 2],
          ["artifact:report", 1, "succeeded", detail.steps[1]!.output, 1],
        ],
      );
      assert.deepEqual(
        detail.artifacts.map((a) => [a.taskId, a.name, a.blobKey]),
        [[r.task.id, "report", `artifacts/${tenant.id}/${old.id}/w1`]],
      );
      // The old task has not moved and lists its re-run; the new one's first advance is queued.
      const before = (await store.getTask(tenant.id, old.id))!;
      assert.equal(before.task.status, "failed");
      assert.deepEqual(before.reruns, [r.task.id]);
      const [item] = await store.claim("w", 1, 30_000);
      assert.equal(item?.kind, "advance");
      assert.equal(item?.payload.taskId, r.task.id);
      const events = await store.taskEvents(tenant.id, 0, 100);
      const mine = events.filter((e) => e.taskId === r.task.id);
      assert.deepEqual(
        mine.map((e) => e.type),
        ["task.created", "task.rerun"],
      );
      assert.deepEqual(mine[0]!.data, { type: "demo.steps", rerun_of: old.id });
      assert.deepEqual(await store.rerunTaskIds(tenant.id, [old.id, r.task.id]), new Set([old.id]));
      await store.close();
    });

    test("from the start nothing is copied; a blob-kept input is copied as its reference", async () => {
      const { store, tenant } = await setup();
      const ref = storedRef({ sha256: "b".repeat(64), size: 5_000_000 });
      const old = await failedTask(store, tenant.id, ref);
      const r = await store.rerunTask({
        tenantId: tenant.id,
        taskId: old.id,
        from: "start",
        clientRequestId: null,
      });
      assert.equal(r.reusedSteps, 0);
      assert.deepEqual(r.task.input, ref);
      const detail = (await store.getTask(tenant.id, r.task.id))!;
      assert.deepEqual(detail.steps, []);
      assert.deepEqual(detail.artifacts, []);
      await store.close();
    });

    test("the same client_request_id returns the first re-run; on another task it is a conflict", async () => {
      const { store, tenant } = await setup();
      const old = await failedTask(store, tenant.id);
      const req = {
        tenantId: tenant.id,
        taskId: old.id,
        from: "failed_step",
        clientRequestId: "rr",
      } as const;
      const [a, b] = await Promise.all([store.rerunTask(req), store.rerunTask(req)]);
      assert.equal(a.task.id, b.task.id);
      assert.deepEqual([a.created, b.created].sort(), [false, true]);
      assert.deepEqual([a.reusedSteps, b.reusedSteps], [2, 2]);
      // Asked again from the start, the answer is still the first re-run, which reused two.
      const again = await store.rerunTask({ ...req, from: "start" });
      assert.deepEqual([again.task.id, again.created, again.reusedSteps], [a.task.id, false, 2]);
      assert.deepEqual((await store.getTask(tenant.id, old.id))!.reruns, [a.task.id]);
      assert.equal((await store.getTask(tenant.id, a.task.id))!.steps.length, 2);
      const second = await failedTask(store, tenant.id);
      await rejectsCode(store.rerunTask({ ...req, taskId: second.id }), "IDEMPOTENCY_CONFLICT");
      await store.close();
    });

    test("a task still going or that succeeded is refused; another tenant's is not found", async () => {
      const { store, tenant, other } = await setup();
      const { task } = await store.submitTask({
        tenantId: tenant.id,
        type: "demo.steps",
        input: {},
        clientRequestId: null,
        userId: null,
        traceId: null,
      });
      const req = {
        tenantId: tenant.id,
        taskId: task.id,
        from: "failed_step",
        clientRequestId: null,
      } as const;
      await rejectsCode(store.rerunTask(req), "TASK_NOT_RERUNNABLE");
      const [item] = await store.claim("w", 1, 30_000);
      const lease: Lease = { itemId: item!.id, owner: "w" };
      await store.beginAdvance(lease, task.id);
      await store.finishAdvance(lease, task.id, { kind: "succeeded", output: 1 });
      await rejectsCode(store.rerunTask(req), "TASK_NOT_RERUNNABLE");
      const old = await failedTask(store, tenant.id);
      await rejectsCode(store.rerunTask({ ...req, tenantId: other.id, taskId: old.id }), "TASK_NOT_FOUND");
      assert.deepEqual((await store.getTask(tenant.id, old.id))!.reruns, []);
      await store.close();
    });
  });
}

const tmp = tempDir("longhaul-rerun-store-");
after(() => tmp.cleanup());
let files = 0;
rerunContract("sqlite", async (clock) => {
  const store = new SqliteStore({ path: join(tmp.dir, `s${files++}.db`), clock });
  await store.migrate();
  return store;
});

const unreachable = await pgUnreachable();
if (pgAvailableOrReport(unreachable, "PostgreSQL re-run tests")) {
  const { fresh } = pgTestSchemas();
  rerunContract("postgres", async (clock) => {
    const store = new PostgresStore({ url: pgUrl(fresh()), clock });
    await store.migrate();
    return store;
  });
}

describe("re-running a type the node no longer registers", () => {
  test("one re-run is TASK_TYPE_UNKNOWN and makes nothing; a bulk re-run skips it", async () => {
    const store = new SqliteStore({
      path: join(tmp.dir, "types.db"),
      clock: new ManualClock(Date.UTC(2026, 0, 1)),
    });
    await store.migrate();
    try {
      const tenant = await store.createTenant({ name: "acme", keyHash: "hash-types" });
      const { task } = await store.submitTask({
        tenantId: tenant.id,
        type: "gone",
        input: {},
        clientRequestId: null,
        userId: null,
        traceId: null,
      });
      const [item] = await store.claim("w", 1, 30_000);
      const lease: Lease = { itemId: item!.id, owner: "w" };
      await store.beginAdvance(lease, task.id);
      await store.finishAdvance(lease, task.id, {
        kind: "failed",
        error: { code: "TASK_FAILED", message: "x" },
      });
      const types = new Registry<TaskType>("task type", "TASK_TYPE_UNKNOWN").add(
        defineTask("kept", async () => null),
      );
      await rejectsCode(
        rerunTask({ tasks: store, taskTypes: types }, { tenantId: tenant.id, taskId: task.id }),
        "TASK_TYPE_UNKNOWN",
      );
      assert.deepEqual((await store.getTask(tenant.id, task.id))!.reruns, []);
      const bulk = await rerunTasks({ tasks: store, taskTypes: types }, { tenantId: tenant.id, filter: {} });
      assert.deepEqual(bulk, { matched: [], reruns: [], more: false });
      // Without a registry to ask, nothing is skipped.
      const made = await rerunTasks({ tasks: store }, { tenantId: tenant.id, filter: {} });
      assert.deepEqual(made.matched, [task.id]);
    } finally {
      await store.close();
    }
  });
});
