import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { LonghaulError } from "../src/core/errors.ts";
import { openStore } from "../src/store/open-store.ts";
import { operationKinds } from "../src/store/sql/sql-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { ThreadedSqliteStore } from "../src/store/sqlite/threaded-store.ts";
import { pack } from "../src/store/sqlite/writer-wire.ts";
import { tempDir } from "./helpers.ts";
import { storeContract } from "./store-contract.ts";

// The SQLite store whose writes run on a writer thread (the default for a file): the whole
// store contract, then what the thread adds — it is what `openStore("sqlite:file")` gives,
// writes commit in groups off this thread, a crashed thread fails calls instead of hanging
// them, and a store nobody closed does not keep the process alive.

const tmp = tempDir();
after(tmp.cleanup);
let n = 0;

storeContract("sqlite (writer thread)", async (clock) => {
  const store = new ThreadedSqliteStore({ path: join(tmp.dir, `contract-${++n}.db`), clock });
  await store.migrate();
  return store;
});

const newTask = (tenantId: string, i: number) => ({
  tenantId,
  type: "x",
  input: i,
  clientRequestId: null,
  userId: null,
  traceId: null,
});

test("openStore gives a file the writer thread, and :memory: or caller-made ids the in-process store", async () => {
  const file = await openStore(`sqlite:${join(tmp.dir, "open.db")}`);
  assert.ok(file instanceof ThreadedSqliteStore);
  await file.close();
  const memory = await openStore("sqlite::memory:");
  assert.ok(memory instanceof SqliteStore);
  await memory.close();
  let k = 0;
  const ids = await openStore(`sqlite:${join(tmp.dir, "ids.db")}`, { ids: { next: (p) => `${p}_${++k}` } });
  assert.ok(ids instanceof SqliteStore);
  await ids.close();
});

test("every write operation of the store is sent to the writer thread, every read stays", async () => {
  const kinds = operationKinds();
  assert.ok(kinds.size > 50, `expected the store's operations, found ${kinds.size}`);
  assert.equal(kinds.get("recordEvent"), "write");
  assert.equal(kinds.get("getTask"), "snapshot");
  assert.equal(kinds.get("taskEvents"), "read");
  const store = new ThreadedSqliteStore({ path: join(tmp.dir, "kinds.db") });
  await store.migrate();
  const own = store as unknown as Record<string, unknown>;
  // complete is sent too, by a method of its own: calls made together cross as one completeMany.
  const folded = ["complete"];
  for (const name of folded) assert.ok(Object.hasOwn(ThreadedSqliteStore.prototype, name), name);
  for (const [name, kind] of kinds) {
    // resealSecrets takes a function, which cannot cross; it runs on the store's own connection.
    const sent = kind === "write" && name !== "resealSecrets" && !folded.includes(name);
    assert.equal(Object.hasOwn(own, name), sent, `${name} (${kind})`);
  }
  await store.close();
});

test("writes of one tick share one transaction on the thread, and a failing one is rolled back alone", async () => {
  const store = new ThreadedSqliteStore({ path: join(tmp.dir, "group.db") });
  await store.migrate();
  const tenant = await store.createTenant({ name: "a", keyHash: "h" });
  const before = store.commits;
  const results = await Promise.allSettled([
    ...Array.from({ length: 50 }, (_, i) => store.submitTask(newTask(tenant.id, i))),
    store.createTenant({ id: tenant.id, name: "dup", keyHash: "h2" }),
  ]);
  assert.ok(store.commits - before <= 2, `51 writes of one tick took ${store.commits - before} commits`);
  assert.equal(results.filter((r) => r.status === "fulfilled").length, 50);
  const failed = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
  // The primary-key violation keeps its code across the thread.
  assert.match(String((failed.reason as { code?: string }).code), /^SQLITE_CONSTRAINT/);
  assert.equal((await store.listTasks(tenant.id, { limit: 100 })).tasks.length, 50);
  assert.equal(await store.tenantByKeyHash("h2"), null);
  await store.close();
});

test("a write resolves after COMMIT: another connection sees it, with its events announced first", async () => {
  const path = join(tmp.dir, "visible.db");
  const store = new ThreadedSqliteStore({ path });
  await store.migrate();
  const tenant = await store.createTenant({ name: "a", keyHash: "hv" });
  const announced: number[] = [];
  store.onTaskEvents((_t, seq) => announced.push(seq));
  let woke = 0;
  store.onWork(() => woke++);
  const { task } = await store.submitTask(newTask(tenant.id, 1));
  assert.equal(announced.length, 1, "the task.created event is announced before the write resolves");
  assert.ok(woke >= 1, "the enqueued advance item woke the workers");
  const other = new Database(path, { readonly: true });
  try {
    const row = other.prepare("SELECT status FROM tasks WHERE id = ?").get(task.id) as
      | { status: string }
      | undefined;
    assert.equal(row?.status, "pending");
  } finally {
    other.close();
  }
  // An error the operation throws arrives as the same LonghaulError.
  await assert.rejects(
    store.cancelTask(tenant.id, "t_missing"),
    (e: unknown) => e instanceof LonghaulError && e.code === "TASK_NOT_FOUND",
  );
  // A Buffer crosses both ways and comes back a Buffer.
  const body = Buffer.from('{"id":"e1"}');
  const rec = await store.recordEvent({ source: "s", provider: "sim", eventId: "e1", body });
  const replayed = await store.replayInboxEvent(rec.id);
  assert.ok(Buffer.isBuffer(replayed.body));
  assert.deepEqual(replayed.body, body);
  await store.close();
});

test("beginAdvance is answered at COMMIT; its task.running reaches this thread after the sync, with no other call to carry it", async () => {
  const store = new ThreadedSqliteStore({ path: join(tmp.dir, "begin-at-commit.db") });
  await store.migrate();
  const tenant = await store.createTenant({ name: "a", keyHash: "h" });
  const { task } = await store.submitTask(newTask(tenant.id, 1));
  const [item] = await store.claim("w", 1, 30_000);
  assert.ok(item);
  const heard: number[] = [];
  let wake: () => void = () => {};
  const announced = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const stop = store.onTaskEvents((_tenant, seq) => {
    heard.push(seq);
    wake();
  });
  assert.equal(await store.beginAdvance({ itemId: item.id, owner: "w" }, task.id), "started");
  // Nothing else is sent: the events travel on their own once the WAL holding them is synced.
  await Promise.race([
    announced,
    new Promise((_, reject) => setTimeout(() => reject(new Error("task.running was never announced")), 5000)),
  ]);
  stop();
  const events = await store.taskEvents(tenant.id, 0, 10);
  const running = events.find((e) => e.type === "task.running");
  assert.ok(running && heard.includes(running.seq));
  await store.close();
});

test("a byte view crosses as its own bytes, not its whole pooled buffer, and the caller's values stay as they were", () => {
  // A small Buffer is a slice of Node's shared pool: cloned as it is, its 8 KiB would cross.
  const body = Buffer.from('{"id":"e1"}');
  assert.ok(body.buffer.byteLength > body.byteLength, "Buffer.from of a short string is a pool slice");
  const event = { source: "s", eventId: "e1", body };
  const args = [event, 7];
  const packed = pack(args) as [{ body: Uint8Array }, number];
  assert.notEqual(packed, args);
  assert.equal(packed[0].body.buffer.byteLength, body.byteLength, "only the view's bytes cross");
  assert.deepEqual(Buffer.from(packed[0].body), body);
  assert.equal(packed[1], 7);
  assert.equal(args[0], event, "the caller's array is unchanged");
  assert.equal(event.body, body, "and so is its object");
  const exact = new Uint8Array(4);
  const plain = [{ a: 1, b: [exact, "x"] }];
  assert.equal(pack(plain), plain, "nothing to compact: the same values, no copy");
});

test("when the writer thread dies, waiting and later writes fail with STORE_UNAVAILABLE instead of hanging", async () => {
  const store = new ThreadedSqliteStore({ path: join(tmp.dir, "dies.db") });
  await store.migrate();
  const writer = (store as unknown as { writer: { terminate(): Promise<number> } }).writer;
  const pending = store.createTenant({ name: "a", keyHash: "hd" });
  await writer.terminate();
  const unavailable = (e: unknown) => e instanceof LonghaulError && e.code === "STORE_UNAVAILABLE";
  await assert.rejects(
    pending.then(() => store.createTenant({ name: "b", keyHash: "hd2" })),
    unavailable,
  );
  await assert.rejects(store.createTenant({ name: "c", keyHash: "hd3" }), unavailable);
  assert.equal(await store.health(), "degraded");
  await store.close();
  // The next store of the process gets a writer thread of its own.
  const next = new ThreadedSqliteStore({ path: join(tmp.dir, "after.db") });
  await next.migrate();
  assert.ok(await next.createTenant({ name: "d", keyHash: "hd4" }));
  await next.close();
});

test("a store nobody closed does not keep the process alive once its writes have answered", async () => {
  const path = join(tmp.dir, "unclosed.db");
  const script = `
    import { ThreadedSqliteStore } from ${JSON.stringify(new URL("../src/store/sqlite/threaded-store.ts", import.meta.url).href)};
    const store = new ThreadedSqliteStore({ path: ${JSON.stringify(path)} });
    await store.migrate();
    await store.createTenant({ name: "a", keyHash: "hu" });
    console.log("written");
  `;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (b) => {
    out += b;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  const code = await new Promise((resolve) => child.on("exit", (c, sig) => resolve(c ?? sig)));
  clearTimeout(timer);
  assert.equal(code, 0, "the process should exit by itself");
  assert.match(out, /written/);
  const raw = new Database(path, { readonly: true });
  assert.equal((raw.prepare("SELECT count(*) AS n FROM tenants").get() as { n: number }).n, 1);
  raw.close();
});
