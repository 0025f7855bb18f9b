import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ManualClock } from "../src/core/clock.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { startRequest } from "../src/core/start-at.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { NewTask, Store } from "../src/store/store.ts";
import { tempDir } from "./helpers.ts";
import { pgAvailableOrReport, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";
import { type Stack, startStack } from "./stack.ts";

// A delayed start (`run_at`, `delay` on submit): the task is stored pending at once and its
// first advance is queued for then, read against the injected clock; never a sleep.

const T0 = Date.UTC(2026, 0, 1);
const MIN = 60_000;

function delayedContract(name: string, open: (clock: ManualClock) => Promise<Store>): void {
  const task = (tenantId: string, start: NewTask["start"]): NewTask => ({
    tenantId,
    type: "demo.echo",
    input: {},
    clientRequestId: null,
    userId: null,
    traceId: null,
    start,
  });

  describe(`${name}: delayed start`, () => {
    test("a delay queues the first advance for then; a past run_at runs now; past a year is refused", async () => {
      const clock = new ManualClock(T0);
      const store = await open(clock);
      try {
        const tenant = await store.createTenant({ name: "acme", keyHash: `hash-${Math.random()}` });
        const { task: later } = await store
          .submitTasks([task(tenant.id, startRequest(null, "10m"))])
          .then((r) => r[0]!);
        assert.equal(later.status, "pending");
        assert.deepEqual(await store.claim("w", 10, 30_000), [], "not before its time");
        clock.advance(10 * MIN);
        const [item] = await store.claim("w", 10, 30_000);
        assert.equal(item?.payload.taskId, later.id);

        const { task: past } = await store.submitTask(
          task(tenant.id, startRequest(new Date(T0 - MIN).toISOString(), null)),
        );
        const [now] = await store.claim("w", 10, 30_000);
        assert.equal(now?.payload.taskId, past.id);

        await assert.rejects(
          store.submitTask(task(tenant.id, startRequest(null, "366d"))),
          (e: unknown) => e instanceof LonghaulError && e.code === "VALIDATION_FAILED" && e.param === "delay",
        );
        const yearOn = new Date(clock.now() + 400 * 86_400_000).toISOString();
        await assert.rejects(
          store.submitTask(task(tenant.id, startRequest(yearOn, null))),
          (e: unknown) => e instanceof LonghaulError && e.param === "run_at",
        );
        assert.equal((await store.listTasks(tenant.id, { limit: 10 })).tasks.length, 2);
      } finally {
        await store.close();
      }
    });
  });
}

const tmp = tempDir("longhaul-delayed-start-");
after(() => tmp.cleanup());
let files = 0;

delayedContract("sqlite", async (clock) => {
  const store = new SqliteStore({ path: join(tmp.dir, `s${files++}.db`), clock });
  await store.migrate();
  return store;
});

const unreachable = await pgUnreachable();
if (pgAvailableOrReport(unreachable, "PostgreSQL delayed start tests")) {
  const { fresh } = pgTestSchemas();
  delayedContract("postgres", async (clock) => {
    const store = new PostgresStore({ url: pgUrl(fresh()), clock });
    await store.migrate();
    return store;
  });
}

describe("delayed start over HTTP", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ clock: new ManualClock(T0) });
  });
  after(() => stack.close());

  test("run_at or delay is accepted and the task waits pending; both, or a bad one, is 400", async () => {
    const r = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: "x" }, delay: "10m" },
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(r.body.status, "pending");
    const both = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: {}, delay: "10m", run_at: "2026-01-01T10:00:00Z" },
    });
    assert.equal(both.status, 400);
    assert.equal(both.body.error.param, "delay");
    const bad = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: {}, run_at: "tomorrow" } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, "run_at");
    const far = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: "x" }, delay: "400d" },
    });
    assert.equal(far.status, 400);
    assert.equal(far.body.error.param, "delay", JSON.stringify(far.body));
  });
});
