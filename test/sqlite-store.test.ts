import assert from "node:assert/strict";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { LonghaulError } from "../src/core/errors.ts";
import { statsSql } from "../src/store/ops/stats-ops.ts";
import { GroupCommit } from "../src/store/sqlite/group-commit.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { loopFreeDuringSync, tempDir } from "./helpers.ts";
import { storeContract } from "./store-contract.ts";

const tmp = tempDir();
after(tmp.cleanup);
let n = 0;

storeContract("sqlite", async (clock) => {
  const store = new SqliteStore({ path: join(tmp.dir, `contract-${++n}.db`), clock });
  await store.migrate();
  return store;
});

test("the database runs in WAL mode; the writer commits without syncing and the group commit syncs the WAL", async () => {
  const store = new SqliteStore({ path: join(tmp.dir, "pragmas.db") });
  await store.migrate();
  assert.equal(store.db.pragma("journal_mode", { simple: true }), "wal");
  assert.equal(store.db.pragma("synchronous", { simple: true }), 1, "NORMAL: the sync is the group commit's");
  assert.ok(await store.createTenant({ name: "a", keyHash: "hp" }));
  await store.close();
  // An in-memory database has no WAL to sync: SQLite's own setting stays.
  const memory = new SqliteStore({ path: ":memory:" });
  assert.equal(memory.db.pragma("synchronous", { simple: true }), 2);
  await memory.close();
});

/**
 * A WAL database file whose writer commits without syncing (as SqliteStore's), with one table
 * `t (x)`: what the GroupCommit tests below drive with a sync of their own.
 */
function walTable(file: string): Database.Database {
  const db = new Database(join(tmp.dir, file));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec("CREATE TABLE t (x INTEGER)");
  return db;
}

test("a write is answered only once a WAL sync begun after its COMMIT returns; the next batch commits meanwhile", async () => {
  const db = walTable("pipelined.db");
  const syncs: { release: (err?: Error) => void; rows: number }[] = [];
  const count = () => (db.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n;
  const writer = new GroupCommit(db, 512, {
    syncWal: () =>
      new Promise<void>((resolve, reject) => {
        syncs.push({ release: (err) => (err ? reject(err) : resolve()), rows: count() });
      }),
  });
  const settled = new Set<string>();
  const track = (name: string, p: Promise<unknown>) =>
    p.then(
      () => settled.add(`${name}:ok`),
      () => settled.add(`${name}:failed`),
    );
  const insert = (x: number) => writer.run(() => db.prepare("INSERT INTO t VALUES (?)").run(x));
  const tick = () => new Promise((r) => setImmediate(r));

  const first = track("first", insert(1));
  await tick();
  await tick();
  assert.equal(syncs.length, 1, "the first batch committed and its sync began");
  assert.equal(syncs[0]!.rows, 1);
  assert.equal(settled.size, 0, "not answered before its sync returns");

  // The next batch runs and commits while the first sync is still in flight. A write asked
  // to be answered at COMMIT (a claim) is answered then, before any sync.
  const second = track("second", insert(2));
  const atCommit = track(
    "atCommit",
    writer.run(() => db.prepare("INSERT INTO t VALUES (3)").run(), { atCommit: true }),
  );
  await tick();
  await tick();
  await atCommit;
  assert.equal(count(), 3, "the second batch committed during the first sync");
  assert.deepEqual([...settled], ["atCommit:ok"]);
  settled.clear();

  syncs[0]!.release();
  await first;
  assert.deepEqual(
    [...settled],
    ["first:ok"],
    "the first sync began before the second COMMIT: it covers only the first",
  );
  await tick();
  assert.equal(syncs.length, 2, "a second sync covers the second batch");
  syncs[1]!.release(new Error("EIO"));
  await second;
  assert.ok(settled.has("second:failed"), "a failed sync fails the writes it was to make durable");
  db.close();
});

test("a batch of claims alone starts no WAL sync; the next write's sync covers it", async () => {
  const db = walTable("claims-unsynced.db");
  const syncs: { release: () => void; rows: number }[] = [];
  const count = () => (db.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n;
  const writer = new GroupCommit(db, 512, {
    syncWal: () => new Promise<void>((resolve) => syncs.push({ release: resolve, rows: count() })),
  });
  const tick = () => new Promise((r) => setImmediate(r));
  const insert = (x: number, atCommit: boolean) =>
    writer.run(() => db.prepare("INSERT INTO t VALUES (?)").run(x), { atCommit });

  await Promise.all([insert(1, true), insert(2, true)]);
  await tick();
  assert.equal(syncs.length, 0, "claims alone are answered at COMMIT and sync nothing");

  let answered = false;
  const write = insert(3, false).then(() => {
    answered = true;
  });
  await tick();
  await tick();
  assert.equal(syncs.length, 1);
  assert.equal(syncs[0]!.rows, 3, "the write's sync begins after its COMMIT, so it covers the claims' too");
  assert.equal(answered, false);
  syncs[0]!.release();
  await write;
  db.close();
});

test("while a WAL sync is in flight, the writes of later turns wait for its end and commit together; not with a claim queued, nor when a worker would act at COMMIT", async () => {
  const db = walTable("deferred.db");
  const syncs: { release: () => void; rows: number }[] = [];
  const count = () => (db.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n;
  let mayWait = true;
  const writer = new GroupCommit(db, 512, {
    syncWal: () => new Promise<void>((resolve) => syncs.push({ release: resolve, rows: count() })),
    mayWait: () => mayWait,
  });
  const tick = () => new Promise((r) => setImmediate(r));
  const insert = (x: number, atCommit = false) =>
    writer.run(() => db.prepare("INSERT INTO t VALUES (?)").run(x), { atCommit });

  const first = insert(1);
  await tick();
  await tick();
  assert.equal(writer.commits, 1);
  assert.equal(syncs.length, 1, "the first write's sync is in flight");
  // Two writes in two later turns: each could be answered only after a sync begun after its
  // COMMIT, which cannot begin before the one in flight ends. They wait, uncommitted.
  const second = insert(2);
  await tick();
  const third = insert(3);
  await tick();
  await tick();
  assert.equal(writer.commits, 1, "nothing commits while the sync runs");
  assert.equal(count(), 1);
  syncs[0]!.release();
  await first;
  await tick();
  await tick();
  assert.equal(writer.commits, 2, "the waiting writes commit together once the sync has ended");
  assert.equal(syncs.length, 2);
  assert.equal(syncs[1]!.rows, 3, "and the next sync, begun after that COMMIT, covers both");

  // A claim (answered at COMMIT) is never held: the writes queued with it commit with it.
  const fourth = insert(4);
  await tick();
  await insert(5, true);
  assert.equal(writer.commits, 3);
  assert.equal(count(), 5);
  // With a worker in the process, which acts on a commit before its sync, nothing waits.
  mayWait = false;
  const sixth = insert(6);
  await tick();
  await tick();
  assert.equal(writer.commits, 4, "committed while the sync runs");
  assert.equal(count(), 6);

  syncs[1]!.release();
  await Promise.all([second, third]);
  await tick();
  assert.equal(syncs.length, 3);
  syncs[2]!.release();
  await Promise.all([fourth, sixth]);
  db.close();
});

test("writes held for a sync that fails are not failed with it: they commit after it and their own sync answers them", async () => {
  const db = walTable("deferred-failed-sync.db");
  const syncs: { release: (err?: Error) => void }[] = [];
  const writer = new GroupCommit(db, 512, {
    syncWal: () =>
      new Promise<void>((resolve, reject) =>
        syncs.push({ release: (err) => (err ? reject(err) : resolve()) }),
      ),
  });
  const tick = () => new Promise((r) => setImmediate(r));
  const insert = (x: number) =>
    writer
      .run(() => db.prepare("INSERT INTO t VALUES (?)").run(x))
      .then(
        () => "ok",
        () => "failed",
      );

  const first = insert(1);
  await tick();
  await tick();
  const held = insert(2);
  await tick();
  await tick();
  assert.equal(writer.commits, 1, "held during the sync");
  syncs[0]!.release(new Error("EIO"));
  assert.equal(await first, "failed", "the write the sync was to make durable fails");
  await tick();
  await tick();
  assert.equal(writer.commits, 2, "the held write commits once the failed sync has ended");
  assert.equal(syncs.length, 2);
  syncs[1]!.release();
  assert.equal(await held, "ok", "and is answered by its own sync");
  db.close();
});

test("closing a SqliteStore while writes are held for a sync waits for them", async () => {
  const path = join(tmp.dir, "close-held.db");
  const store = new SqliteStore({ path });
  await store.migrate();
  const writer = (store as unknown as { writer: Record<string, unknown> }).writer;
  const realSync = writer.syncWal as () => Promise<void>;
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  // The first sync is held until the close has been asked for; the later ones are real.
  writer.syncWal = async () => {
    writer.syncWal = realSync;
    await gate;
    await realSync();
  };
  const tick = () => new Promise((r) => setImmediate(r));
  const a = store.createTenant({ name: "a", keyHash: "ha" });
  await tick();
  await tick();
  const b = store.createTenant({ name: "b", keyHash: "hb" });
  await tick();
  const closed = store.close();
  await tick();
  release();
  await closed;
  const [ta, tb] = await Promise.all([a, b]);
  const reopened = new SqliteStore({ path });
  assert.equal((await reopened.getTenant(ta.id))?.name, "a");
  assert.equal((await reopened.getTenant(tb.id))?.name, "b", "the held write was committed before the close");
  await reopened.close();
});

/**
 * Holds every WAL sync of `store` until the test lets it return: `held` counts the syncs
 * waiting, `release` lets them all return, `unhold` makes later syncs return at once.
 */
function holdSyncs(store: SqliteStore) {
  const held: (() => void)[] = [];
  const writer = (store as unknown as { writer: Record<string, unknown> }).writer;
  writer.syncWal = () => new Promise<void>((resolve) => held.push(resolve));
  writer.syncWalNow = null;
  return {
    held,
    release: () => {
      for (const r of held.splice(0)) r();
    },
    unhold: () => {
      writer.syncWal = async () => {};
    },
  };
}

test("a SqliteStore holds writes for the sync in flight only while no worker of the process listens for work", async () => {
  const store = new SqliteStore({ path: join(tmp.dir, "store-deferred.db") });
  await store.migrate();
  const { held, release, unhold } = holdSyncs(store);
  const tick = () => new Promise((r) => setImmediate(r));
  const tenant = (name: string) => store.createTenant({ name, keyHash: `h-${name}` });

  const a = tenant("a");
  await tick();
  await tick();
  assert.equal(held.length, 1, "a's sync is in flight");
  const before = store.commits;
  const b = tenant("b");
  await tick();
  await tick();
  assert.equal(store.commits, before, "b waits for the sync in flight: nobody would act on it sooner");

  // A worker of the process listens: what commits may make work due for it at once.
  const stop = store.onWork(() => {});
  const c = tenant("c");
  await tick();
  await tick();
  assert.equal(store.commits, before + 1, "c commits while the sync runs, and b, queued first, with it");
  stop();
  let done = false;
  const all = Promise.all([a, b, c]).finally(() => {
    done = true;
  });
  while (!done) {
    release();
    await tick();
  }
  assert.deepEqual(
    (await all).map((t) => t.name),
    ["a", "b", "c"],
  );
  unhold();
  await store.close();
});

test("a SqliteStore's reads of one turn share one read transaction, ended before the next write and at the turn's end", async () => {
  const store = new SqliteStore({ path: join(tmp.dir, "shared-read.db") });
  await store.migrate();
  const a = await store.createTenant({ name: "a", keyHash: "ha" });
  assert.equal(store.db.inTransaction, false);
  // Two reads issued together: the first opens the transaction, the second runs in it.
  const [one, two] = await Promise.all([store.getTenant(a.id), store.getTenant(a.id)]);
  assert.equal(one?.name, "a");
  assert.equal(two?.name, "a");
  assert.equal(store.db.inTransaction, true, "still open within the turn, for the next read");
  // A write in the same turn ends it first (BEGIN IMMEDIATE cannot nest), and a read after
  // the write sees it.
  const b = await store.createTenant({ name: "b", keyHash: "hb" });
  assert.equal((await store.getTenant(b.id))?.name, "b");
  await new Promise((r) => setImmediate(r));
  assert.equal(store.db.inTransaction, false, "ended at the turn's end: nothing held between turns");
  // Another connection's write is seen by the next turn's reads.
  const other = new Database(join(tmp.dir, "shared-read.db"));
  other.prepare("UPDATE tenants SET name = 'a2' WHERE id = ?").run(a.id);
  other.close();
  assert.equal((await store.getTenant(a.id))?.name, "a2");
  await store.close();
});

test("a SqliteStore syncs the WAL off the event loop: a lone write's sync does not hold up the loop, unless syncInPlace", async () => {
  const shared = new SqliteStore({ path: join(tmp.dir, "loop-free.db") });
  await shared.migrate();
  assert.deepEqual(await loopFreeDuringSync(shared), Array(3).fill(["loop", "write"]));
  await shared.close();
  // A worker node's choice: the sync in place, the loop held for it.
  const inPlace = new SqliteStore({ path: join(tmp.dir, "in-place.db"), syncInPlace: true });
  await inPlace.migrate();
  assert.deepEqual(await loopFreeDuringSync(inPlace), Array(3).fill(["write", "loop"]));
  await inPlace.close();
});

test("with nothing waiting the WAL is synced in place; with writes waiting or a sync in flight, pipelined", async () => {
  const db = walTable("sync-in-place.db");
  const calls: string[] = [];
  const inFlight: (() => void)[] = [];
  let failNow: Error | null = null;
  const writer = new GroupCommit(db, 1, {
    syncWal: () =>
      new Promise<void>((resolve) => {
        calls.push("pipelined");
        inFlight.push(resolve);
      }),
    syncWalNow: () => {
      calls.push("in place");
      if (failNow) throw failNow;
    },
  });
  const insert = (x: number) => writer.run(() => db.prepare("INSERT INTO t VALUES (?)").run(x));

  await insert(1);
  assert.deepEqual(calls, ["in place"], "a lone write is synced where it committed");

  // One write per batch: the first commits with the second waiting, the second while the
  // first one's sync is in flight. Neither holds the other up with a sync in place.
  calls.length = 0;
  const both = Promise.all([insert(2), insert(3)]);
  const ticks = async () => {
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  };
  await ticks();
  assert.equal(db.prepare("SELECT count(*) AS n FROM t").pluck().get(), 3, "both batches committed");
  assert.deepEqual(calls, ["pipelined"], "the second batch's sync waits for the first one's");
  inFlight.shift()!();
  await ticks();
  assert.deepEqual(calls, ["pipelined", "pipelined"]);
  inFlight.shift()!();
  await both;

  calls.length = 0;
  failNow = new Error("EIO");
  await assert.rejects(insert(4), /EIO/, "a failed sync fails the write it was to make durable");
  db.close();
});

test("a write answered at COMMIT is told when it is durable; a batch anyone heard of at COMMIT syncs off the loop", async () => {
  const db = walTable("durable-hooks.db");
  const calls: string[] = [];
  const inFlight: ((err?: Error) => void)[] = [];
  // One write per batch.
  const writer = new GroupCommit(db, 1, {
    syncWal: () =>
      new Promise<void>((resolve, reject) => {
        calls.push("pipelined");
        inFlight.push((err) => (err ? reject(err) : resolve()));
      }),
    syncWalNow: () => {
      calls.push("in place");
    },
  });
  const tick = async () => {
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };
  const log: string[] = [];
  const insert = (x: number) => () => db.prepare("INSERT INTO t VALUES (?)").run(x);
  const seen = () => `[${calls.join(", ")}]`;

  // A begin: answered at COMMIT while its sync runs off the loop (its task runs meanwhile),
  // durable after the sync returns.
  await writer
    .run(
      () => {
        insert(1)();
        writer.whenDurable((err) => log.push(err ? "durable:failed" : `durable ${seen()}`));
      },
      { atCommit: true },
    )
    .then(() => log.push(`answered ${seen()}`));
  assert.deepEqual(log, ["answered [pipelined]"]);
  inFlight.shift()!();
  await tick();
  assert.deepEqual(log, ["answered [pipelined]", "durable [pipelined]"]);

  // A write whose COMMIT woke someone (a worker, for the work it made due): the signal comes
  // right after COMMIT, the sync runs off the loop, the answer comes once it has returned.
  log.length = 0;
  calls.length = 0;
  const signalled = writer
    .run(insert(2), {
      committed: () => {
        log.push(`signal ${seen()}`);
        return true;
      },
    })
    .then(() => log.push(`answered ${seen()}`));
  await tick();
  assert.deepEqual(log, ["signal []"]);
  inFlight.shift()!();
  await signalled;
  assert.deepEqual(log, ["signal []", "answered [pipelined]"]);

  // Nobody answered early and nobody listened: synced in place.
  calls.length = 0;
  await writer.run(insert(3), { committed: () => false });
  assert.deepEqual(calls, ["in place"]);
  db.close();
});

test("a write answered at COMMIT hears when the sync that was to make it durable fails", async () => {
  const db = walTable("durable-failed.db");
  const inFlight: ((err?: Error) => void)[] = [];
  const writer = new GroupCommit(db, 512, {
    syncWal: () =>
      new Promise<void>((resolve, reject) => inFlight.push((err) => (err ? reject(err) : resolve()))),
  });
  const log: string[] = [];
  await writer.run(
    () => {
      db.prepare("INSERT INTO t VALUES (1)").run();
      writer.whenDurable((err) => log.push(err ? "durable:failed" : "durable"));
    },
    { atCommit: true },
  );
  assert.equal(log.length, 0, "answered at COMMIT; a sync was started for it");
  assert.equal(inFlight.length, 1);
  // An operation rolled back after asking is never told: its batch (answered at COMMIT) starts
  // no sync for it.
  await assert.rejects(
    writer.run(
      () => {
        db.prepare("INSERT INTO t VALUES (2)").run();
        writer.whenDurable(() => log.push("rolled back, told anyway"));
        throw new Error("no");
      },
      { atCommit: true },
    ),
    /no/,
  );
  assert.equal(inFlight.length, 1, "no second sync");
  inFlight.shift()!(new Error("EIO"));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(log, ["durable:failed"]);
  db.close();
});

test("a SqliteStore answers claims, begins and bare completes at COMMIT; a recorded write and a begin's event wait for the WAL's sync", async () => {
  const store = new SqliteStore({ path: join(tmp.dir, "store-at-commit.db") });
  await store.migrate();
  const tenant = await store.createTenant({ name: "a", keyHash: "h" });
  const { held, release, unhold } = holdSyncs(store);
  const tick = () => new Promise((r) => setImmediate(r));
  /** The call's value if it is answered within a few turns, with every sync held. */
  const answered = async <T>(p: Promise<T>): Promise<T> => {
    let out: { v: T } | null = null;
    void p.then((v) => {
      out = { v };
    });
    for (let i = 0; i < 5 && !out; i++) await tick();
    assert.ok(out, "answered with the WAL's sync still held");
    return (out as { v: T }).v;
  };
  const events: number[] = [];
  store.onTaskEvents((_tenant, seq) => events.push(seq));

  let submitted = false;
  const submit = store
    .submitTask({
      tenantId: tenant.id,
      type: "x",
      input: 1,
      clientRequestId: null,
      userId: null,
      traceId: null,
    })
    .then((r) => {
      submitted = true;
      return r;
    });
  await tick();
  await tick();
  assert.equal(held.length, 1, "the submit's batch committed and its sync began");
  assert.equal(submitted, false, "a recorded write is not answered before its sync returns");
  assert.deepEqual(events, [], "nor is its task.created announced");
  release();
  const { task } = await submit;
  assert.equal(events.length, 1);

  // A claim and a begin are answered with the sync still held; the begin's task.running waits.
  const [item] = await answered(store.claim("w", 1, 30_000));
  assert.ok(item);
  assert.equal(held.length, 0, "a claim alone starts no sync");
  const lease = { itemId: item.id, owner: "w" };
  assert.equal(await answered(store.beginAdvance(lease, task.id)), "started");
  assert.equal(events.length, 1, "task.running is not announced before its sync");
  assert.equal(held.length, 1, "a begin that appended an event starts a sync");
  release();
  await tick();
  assert.equal(events.length, 2, "task.running is announced once durable");

  // A bare complete: answered at COMMIT, no sync of its own.
  await answered(store.complete(lease));
  assert.equal(held.length, 0, "a bare complete starts no sync");
  assert.equal(
    (store.db.prepare("SELECT count(*) AS n FROM work_items WHERE id = ?").get(item.id) as { n: number }).n,
    0,
  );
  await assert.rejects(
    store.complete(lease),
    (e: unknown) => e instanceof LonghaulError && e.code === "LEASE_LOST",
  );
  unhold();
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

test("a write that throws after writing is rolled back alone, and the batch's others run once more in their savepoints", async () => {
  const db = new Database(":memory:");
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
  const writer = new GroupCommit(db);
  const put = (k: string) => db.prepare("INSERT INTO t (k) VALUES (?)").run(k);
  const runs: string[] = [];
  const durable: string[] = [];
  const [a, b, c] = await Promise.allSettled([
    writer.run(() => {
      runs.push("a");
      put("a");
      writer.whenDurable(() => durable.push("a"));
      return "a";
    }),
    writer.run(() => {
      runs.push("b");
      put("b");
      throw new Error("b fails after its insert");
    }),
    writer.run(() => {
      runs.push("c");
      put("c");
      writer.whenDurable(() => durable.push("c"));
      return "c";
    }),
  ]);
  assert.deepEqual([a.status, b.status, c.status], ["fulfilled", "rejected", "fulfilled"]);
  assert.equal((a as PromiseFulfilledResult<string>).value, "a");
  // The first run, without savepoints, stops at b; the second runs all three.
  assert.deepEqual(runs, ["a", "b", "a", "b", "c"]);
  assert.equal(writer.rerun, 1);
  assert.equal(writer.commits, 1);
  assert.deepEqual(
    (db.prepare("SELECT k FROM t ORDER BY k").all() as { k: string }[]).map((r) => r.k),
    ["a", "c"],
  );
  assert.deepEqual(durable, ["a", "c"], "each durable callback of the run that committed, once");

  // A batch in which nothing throws runs once.
  await Promise.all([writer.run(() => put("d")), writer.run(() => put("e"))]);
  assert.equal(writer.rerun, 1);
  assert.equal(writer.commits, 2);

  // A batch whose only operation throws runs once, and nothing of it is kept.
  let lone = 0;
  await assert.rejects(
    writer.run(() => {
      lone++;
      put("f");
      throw new Error("f fails alone");
    }),
    /f fails alone/,
  );
  assert.equal(lone, 1);
  assert.equal(writer.rerun, 1);
  assert.equal((db.prepare("SELECT count(*) AS n FROM t WHERE k = 'f'").get() as { n: number }).n, 0);
  await writer.run(() => put("g"));
  assert.equal(writer.commits, 3);
  db.close();
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

test("the queue's indexes hold only the items their queries look for, and every queue query stays indexed", async () => {
  const store = new SqliteStore({ path: join(tmp.dir, "queue-indexes.db") });
  await store.migrate();
  const cells = () =>
    Object.fromEntries(
      (
        store.db
          .prepare(
            `SELECT m.name, coalesce((SELECT sum(ncell) FROM dbstat d WHERE d.name = m.name AND d.pagetype = 'leaf'), 0) AS n
               FROM sqlite_master m WHERE m.type = 'index' AND m.tbl_name = 'work_items' ORDER BY m.name`,
          )
          .all() as { name: string; n: number }[]
      ).map((r) => [r.name, r.n]),
    );
  await store.enqueue(
    Array.from({ length: 20 }, (_, i) => ({ kind: "maintenance", tenantId: null, payload: { i } })),
  );
  const items = await store.claim("w", 8, 30_000);
  assert.equal(items.length, 8);
  // Leasing moves an item out of the pending indexes and into work_leases only: without a
  // concurrency key it has no place in work_leased_key.
  assert.deepEqual(cells(), {
    work_dead: 0,
    work_dedupe: 0,
    work_due: 12,
    work_lane: 12,
    work_leased_key: 0,
    work_leases: 8,
    work_parked: 0,
  });
  await Promise.all(items.map((i) => store.complete({ itemId: i.id, owner: "w" })));
  assert.equal(cells().work_leases, 0);

  const plan = (sql: string, ...params: unknown[]) =>
    (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map(
      (r) => r.detail,
    );
  const queries: [string, unknown[]][] = [
    ["SELECT MIN(run_at) AS t FROM work_items WHERE status = 'pending'", []],
    ["SELECT * FROM work_items WHERE status = 'dead' ORDER BY id DESC LIMIT ?", [10]],
    [
      "SELECT id, attempts, max_attempts, lease_owner FROM work_items WHERE status = 'leased' AND lease_expires_at <= ? ORDER BY id",
      [0],
    ],
    ["UPDATE work_items SET lease_expires_at = ? WHERE status = 'leased'", [0]],
    ["SELECT 1 FROM work_items WHERE concurrency_key = ? AND status = 'leased'", ["task:x"]],
    [
      "DELETE FROM work_items WHERE id IN (SELECT value FROM json_each(?)) AND lease_owner = ? AND status = 'leased' RETURNING id",
      ["[1]", "w"],
    ],
  ];
  for (const [sql, params] of queries) {
    const steps = plan(sql, ...params);
    assert.ok(!steps.includes("SCAN work_items"), `${sql}: ${steps.join("; ")}`);
  }
  await store.close();
});

test("the task stats read one index each, covering, and never scan the tasks table", async () => {
  const store = new SqliteStore({ path: join(tmp.dir, "stats-plan.db") });
  await store.migrate();
  const plan = (sql: string) =>
    (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all("tn", 0, 1, 10) as { detail: string }[])
      .map((r) => r.detail)
      .join("; ");
  assert.match(plan(statsSql.submitted), /SEARCH tasks USING COVERING INDEX tasks_by_tenant_created/);
  assert.match(plan(statsSql.ended), /SEARCH tasks USING COVERING INDEX tasks_by_tenant_ended/);
  for (const sql of Object.values(statsSql)) assert.doesNotMatch(plan(sql), /TEMP B-TREE|SCAN tasks/);
  await store.close();
});
