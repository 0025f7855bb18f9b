import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { ManualClock } from "../src/core/clock.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { NewTask, Store } from "../src/store/store.ts";
import { tempDir } from "./helpers.ts";
import { pgAvailableOrReport, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";

// The store's half of a batch submit (issue #34), on a SQLite file and on PostgreSQL: one
// transaction, all or nothing, answers in order.

type Open = (clock: ManualClock) => Promise<Store>;

function batchContract(name: string, open: Open): void {
  const setup = async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const store = await open(clock);
    const tenant = await store.createTenant({ name: "acme", keyHash: `hash-acme-${Math.random()}` });
    const other = await store.createTenant({ name: "other", keyHash: `hash-other-${Math.random()}` });
    return { store, tenant, other };
  };
  const task = (tenantId: string, x: number, clientRequestId: string | null = null): NewTask => ({
    tenantId,
    type: "demo.echo",
    input: { x },
    clientRequestId,
    userId: null,
    traceId: null,
  });
  const count = async (store: Store, tenantId: string) =>
    (await store.listTasks(tenantId, { limit: 100 })).tasks.length;

  describe(`${name}: batch submit`, () => {
    test("writes every task, in order, each with its first advance queued", async () => {
      const { store, tenant } = await setup();
      try {
        const made = await store.submitTasks([1, 2, 3].map((x) => task(tenant.id, x)));
        assert.deepEqual(
          made.map((m) => [m.created, m.task.input]),
          [
            [true, { x: 1 }],
            [true, { x: 2 }],
            [true, { x: 3 }],
          ],
        );
        const claimed = await store.claim("w", 10, 30_000);
        assert.deepEqual(
          claimed.map((c) => String(c.payload.taskId)).sort(),
          made.map((m) => m.task.id).sort(),
        );
      } finally {
        await store.close();
      }
    });

    test("an id used before answers its task; a quota run out part way writes nothing", async () => {
      const { store, tenant, other } = await setup();
      try {
        const [first] = await store.submitTasks([task(tenant.id, 1, "a")]);
        await store.updateTenant(tenant.id, { quotas: { tasks_per_day: 3 } });
        const again = await store.submitTasks([task(tenant.id, 1, "a"), task(tenant.id, 2)]);
        assert.equal(again[0]!.task.id, first!.task.id);
        assert.equal(again[0]!.created, false);
        assert.equal(again[1]!.created, true);
        await assert.rejects(
          store.submitTasks([task(tenant.id, 3), task(tenant.id, 4)]),
          (e: unknown) => e instanceof LonghaulError && e.code === "QUOTA_EXCEEDED",
        );
        assert.equal(await count(store, tenant.id), 2, "the refused batch left nothing");
        assert.equal((await store.submitTasks([task(tenant.id, 5)])).length, 1, "the room left is kept");
        // A conflicting item refuses the batch too, the items before it included.
        await assert.rejects(
          store.submitTasks([task(other.id, 1), task(other.id, 2, "b"), task(other.id, 3, "b")]),
          (e: unknown) => e instanceof LonghaulError && e.code === "IDEMPOTENCY_CONFLICT",
        );
        assert.equal(await count(store, other.id), 0);
        assert.equal((await store.submitTasks([task(other.id, 1), task(other.id, 2)])).length, 2);
      } finally {
        await store.close();
      }
    });
  });
}

const tmp = tempDir("longhaul-batch-store-");
after(() => tmp.cleanup());
let files = 0;

batchContract("sqlite", async (clock) => {
  const store = new SqliteStore({ path: join(tmp.dir, `s${files++}.db`), clock });
  await store.migrate();
  return store;
});

const unreachable = await pgUnreachable();
if (pgAvailableOrReport(unreachable, "PostgreSQL batch submit tests")) {
  const { fresh } = pgTestSchemas();
  batchContract("postgres", async (clock) => {
    const store = new PostgresStore({ url: pgUrl(fresh()), clock });
    await store.migrate();
    return store;
  });
}
