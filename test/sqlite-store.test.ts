import assert from "node:assert/strict";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { LonghaulError } from "../src/core/errors.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { tempDir } from "./helpers.ts";
import { storeContract } from "./store-contract.ts";

const tmp = tempDir();
after(tmp.cleanup);
let n = 0;

storeContract("sqlite", async (clock) => {
  const store = new SqliteStore({ path: join(tmp.dir, `contract-${++n}.db`), clock });
  await store.migrate();
  return store;
});

test("the database runs in WAL mode with synchronous=FULL", async () => {
  const store = new SqliteStore({ path: join(tmp.dir, "pragmas.db") });
  await store.migrate();
  assert.equal(store.db.pragma("journal_mode", { simple: true }), "wal");
  assert.equal(store.db.pragma("synchronous", { simple: true }), 2);
  await store.close();
});

test("writes of one tick share one transaction, and a failing one is rolled back alone", async () => {
  const store = new SqliteStore({ path: join(tmp.dir, "group.db") });
  await store.migrate();
  const tenant = await store.createTenant({ name: "a", keyHash: "h" });
  const before = store.commits;
  const results = await Promise.allSettled([
    ...Array.from({ length: 50 }, (_, i) =>
      store.submitTask({
        tenantId: tenant.id,
        type: "x",
        input: i,
        clientRequestId: null,
        userId: null,
        traceId: null,
      }),
    ),
    // A duplicate tenant id violates the primary key: only this one fails.
    store.createTenant({ id: tenant.id, name: "dup", keyHash: "h2" }),
  ]);
  assert.equal(store.commits - before, 1, "51 writes of one tick should commit together");
  assert.equal(results.filter((r) => r.status === "fulfilled").length, 50);
  assert.equal(results.filter((r) => r.status === "rejected").length, 1);
  assert.equal((await store.listTasks(tenant.id, { limit: 100 })).tasks.length, 50);
  assert.equal(await store.tenantByKeyHash("h2"), null);
  await store.close();
});

test("a database with a newer schema is refused", async () => {
  const path = join(tmp.dir, "newer.db");
  const store = new SqliteStore({ path });
  await store.migrate();
  await store.close();
  const raw = new Database(path);
  raw.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)").run();
  raw.close();
  const again = new SqliteStore({ path });
  await assert.rejects(
    again.migrate(),
    (e: unknown) => e instanceof LonghaulError && e.code === "SCHEMA_TOO_NEW",
  );
  await again.close();
});

test("migrating twice is a no-op", async () => {
  const store = new SqliteStore({ path: join(tmp.dir, "twice.db") });
  const first = await store.migrate();
  const second = await store.migrate();
  assert.equal(first.from, 0);
  assert.equal(second.from, second.to);
  await store.close();
});
