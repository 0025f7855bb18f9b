// The durable ceiling's SQLite writer (bench/ceiling/standard-webhooks-server.mjs --durable):
// one table, unique by webhook-id, group commit, the WAL synced with fdatasync on the thread
// pool. `durableRecorder` runs it on the calling thread; `threadRecorder` runs the same code on
// a worker thread of its own, started from this file, and talks to it in one message per turn.
import { fdatasync, openSync } from "node:fs";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

/**
 * `record(id, body, done)`: the row is inserted with the others of this turn of the loop in
 * one transaction, and `done` is called once a WAL sync begun after its COMMIT has returned.
 */
export async function durableRecorder(file) {
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec(`CREATE TABLE IF NOT EXISTS deliveries (
    id INTEGER PRIMARY KEY, webhook_id TEXT NOT NULL UNIQUE, body BLOB NOT NULL, received_at INTEGER NOT NULL)`);
  const insert = db.prepare(
    "INSERT INTO deliveries (webhook_id, body, received_at) VALUES (?, ?, ?) ON CONFLICT (webhook_id) DO NOTHING",
  );
  const commit = db.transaction((rows) => {
    const now = Date.now();
    for (const r of rows) insert.run(r.id, r.body, now);
  });
  const wal = openSync(`${file}-wal`, "a");
  let batch = [];
  let unsynced = [];
  let syncing = false;
  const sync = () => {
    syncing = true;
    const covered = unsynced;
    unsynced = [];
    fdatasync(wal, (err) => {
      for (const done of covered) done(err);
      // The rows that arrived during this sync commit together now, and the next sync covers them.
      if (batch.length > 0) flush();
      if (unsynced.length > 0) sync();
      else syncing = false;
    });
  };
  const flush = () => {
    const rows = batch;
    if (rows.length === 0) return;
    batch = [];
    try {
      commit(rows);
    } catch (err) {
      for (const r of rows) r.done(err);
      return;
    }
    for (const r of rows) unsynced.push(r.done);
    if (!syncing) sync();
  };
  return (id, body, done) => {
    batch.push({ id, body, done });
    // While a sync is in flight the rows wait for its end: none of them could be answered
    // before the next sync anyway, and one COMMIT writes each page once.
    if (batch.length === 1 && !syncing) setImmediate(flush);
  };
}

/**
 * The same `record(id, body, done)`, its writer on a thread of its own: the deliveries of one
 * turn of the loop go to it in one message, and it answers each message once all its rows are
 * on disk (or with the first error).
 */
export async function threadRecorder(file) {
  const writer = new Worker(new URL(import.meta.url), { workerData: { durableWriter: file } });
  writer.unref();
  await new Promise((resolve, reject) => {
    writer.once("message", resolve);
    writer.once("error", reject);
  });
  const waiting = new Map();
  let seq = 0;
  let dones = [];
  let ids = [];
  let bodies = [];
  writer.on("message", (m) => {
    for (const done of waiting.get(m.seq)) done(m.error ? new Error(m.error) : undefined);
    waiting.delete(m.seq);
  });
  const flush = () => {
    waiting.set(++seq, dones);
    writer.postMessage({ seq, ids, bodies });
    dones = [];
    ids = [];
    bodies = [];
  };
  return (id, body, done) => {
    dones.push(done);
    ids.push(id);
    bodies.push(body);
    if (dones.length === 1) setImmediate(flush);
  };
}

if (!isMainThread && workerData?.durableWriter) {
  const record = await durableRecorder(workerData.durableWriter);
  parentPort.on("message", ({ seq, ids, bodies }) => {
    let left = ids.length;
    let failed;
    const done = (err) => {
      failed ??= err;
      if (--left === 0) parentPort.postMessage({ seq, error: failed ? String(failed) : undefined });
    };
    for (let i = 0; i < ids.length; i++) record(ids[i], bodies[i], done);
  });
  parentPort.postMessage({ ready: true });
}
