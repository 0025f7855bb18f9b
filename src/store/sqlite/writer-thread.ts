import { parentPort } from "node:worker_threads";
import { SqliteStore } from "./sqlite-store.ts";
import { type Call, errorOut, type Reply, revive } from "./writer-wire.ts";

/*
 * The SQLite writer thread: it owns the connections that write, each with its group commit,
 * so statements and the COMMIT's fsync never run on the event loop of the thread that serves
 * HTTP (ThreadedSqliteStore, ARCHITECTURE §4.1). One thread serves every store of a process.
 * Each call names a store and one of its methods; it runs on an in-process SqliteStore at the
 * time the caller sent with it, and its answer goes back after COMMIT with the task events
 * the store announced and whether work became due.
 */

const port = parentPort;
if (!port) throw new Error("writer-thread is started by ThreadedSqliteStore");

/** The caller's clock: every call brings the time it was made at. */
let callTime = Date.now();
const clock = { now: () => callTime };

interface Open {
  store: SqliteStore;
  tenants: string[];
  seqs: number[];
  work: boolean;
}
const stores = new Map<number, Open>();
/** Why a store could not be opened, for the calls that follow its `open`. */
const failed = new Map<number, unknown>();

function open(id: number, path: string): void {
  const store = new SqliteStore({ path, clock, onWriterThread: true });
  const o: Open = { store, tenants: [], seqs: [], work: false };
  store.onTaskEvents((tenantId, seq) => {
    o.tenants.push(tenantId);
    o.seqs.push(seq);
    schedule();
  });
  store.onWork(() => {
    o.work = true;
    schedule();
  });
  stores.set(id, o);
}

function reply(call: Call, r: Reply): void {
  // Answers go back together once per turn of the thread's loop: a group commit's batch is
  // one crossing.
  replies.push(withNews(call.store, r));
  schedule();
}

/**
 * What the store's writes announced so far travels with the answer: the caller hears of an
 * event no later than of the write that made it.
 */
function withNews(store: number, r: Reply): Reply {
  const o = stores.get(store);
  if (!o) return r;
  if (o.seqs.length > 0) {
    r.events = { tenants: o.tenants, seqs: o.seqs };
    o.tenants = [];
    o.seqs = [];
  }
  if (o.work) {
    r.work = true;
    o.work = false;
  }
  r.commits = o.store.commits;
  return r;
}

let replies: Reply[] = [];
let scheduled = false;
function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(flush);
}
function flush(): void {
  scheduled = false;
  // What no answer has carried goes as a notice (id 0, which no call waits for): work made due,
  // signalled at COMMIT, before the write is answered after the WAL's sync; the events of a
  // write answered at COMMIT, announced after that sync.
  for (const [store, o] of stores) {
    if (o.seqs.length > 0 || o.work)
      replies.push(withNews(store, { id: 0, store, ok: true, value: undefined }));
  }
  const out = replies;
  replies = [];
  if (out.length > 0) port!.postMessage(out);
}

async function run(call: Call): Promise<unknown> {
  if (call.method === "open") {
    open(call.store, call.args[0] as string);
    return undefined;
  }
  const o = stores.get(call.store);
  if (!o) throw failed.get(call.store) ?? new Error(`store ${call.store} is closed`);
  if (call.method === "close") {
    await o.store.close();
    stores.delete(call.store);
    return undefined;
  }
  const fn = (o.store as unknown as Record<string, unknown>)[call.method];
  if (typeof fn !== "function") throw new Error(`No store method ${call.method}`);
  return fn.apply(o.store, revive(call.args) as unknown[]);
}

port.on("message", (calls: Call[]) => {
  for (const call of calls) receive(call);
});

function receive(call: Call): void {
  callTime = call.now;
  let result: Promise<unknown>;
  try {
    result = Promise.resolve(run(call));
  } catch (error) {
    result = Promise.reject(error);
  }
  result.then(
    (value) => reply(call, { id: call.id, store: call.store, ok: true, value }),
    (error: unknown) => {
      if (call.method === "open") failed.set(call.store, error);
      reply(call, { id: call.id, store: call.store, ok: false, error: errorOut(error) });
    },
  );
}
