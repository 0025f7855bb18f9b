import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { Worker } from "node:worker_threads";
import type Database from "better-sqlite3";
import { type Clock, systemClock } from "../../core/clock.ts";
import { LonghaulError } from "../../core/errors.ts";
import { ulidGenerator } from "../../core/ids.ts";
import * as outbound from "../ops/outbound-ops.ts";
import { operationKinds, type Runner, SqlStore } from "../sql/sql-store.ts";
import type { Tx } from "../sql/tx.ts";
import type { Lease, WorkItem } from "../store.ts";
import { CompleteFold } from "./claim.ts";
import { openDatabase, Sql } from "./db.ts";
import { LocalNotifier } from "./notifier.ts";
import { inboxForJobs } from "./sqlite-store.ts";
import { type Effects, sqliteTx } from "./tx.ts";
import { type Call, errorIn, pack, type Reply, revive } from "./writer-wire.ts";

export interface ThreadedSqliteStoreOptions {
  /** The database file (not `:memory:`: two connections must see the same database). */
  path: string;
  /** The time each write is made at is read here and sent with it. */
  clock?: Clock;
}

interface Waiting {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** What a store hears from the writer thread besides its answers. */
interface StoreLink {
  answered(r: Reply): void;
  stopped(error: Error): void;
}

/**
 * The one writer thread of this process, shared by its ThreadedSqliteStores; a new one is
 * started if it has stopped. Only calls waiting for an answer keep the process alive.
 */
class WriterThread {
  private readonly worker = startWriter();
  private readonly waiting = new Map<number, Waiting>();
  private readonly links = new Map<number, StoreLink>();
  private nextId = 1;
  private nextStore = 1;
  stopped: Error | null = null;

  constructor() {
    this.worker.unref();
    this.worker.on("message", (rs: Reply[]) => this.answers(rs));
    this.worker.on("error", (e) => this.stop(e));
    this.worker.on("exit", (code) => this.stop(new Error(`the SQLite writer thread exited (code ${code})`)));
  }

  /** A store of the thread's on that file; calls made for it run after it is open. */
  open(path: string, link: StoreLink, now: number): number {
    const store = this.nextStore++;
    this.links.set(store, link);
    this.call(store, "open", [path], now).catch(() => {
      // Each call for the store fails with the same error.
    });
    return store;
  }

  call<T>(store: number, method: string, args: unknown[], now: number): Promise<T> {
    if (this.stopped) return Promise.reject(unavailable(this.stopped));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.send({ id, store, method, args, now });
      if (method === "close") this.links.delete(store);
    });
  }

  /**
   * Calls go out together once per turn of the event loop, as one message: the writes of many
   * requests cost one crossing, and arrive together for one group commit.
   */
  private send(call: Call): void {
    this.outbox.push(call);
    if (this.outbox.length === 1) setImmediate(this.flush);
  }
  private outbox: Call[] = [];
  /** The last call waiting to go out (an opaque mark): its arguments may still grow until then. */
  last(): unknown {
    return this.outbox.at(-1);
  }
  private readonly flush = () => {
    const calls = this.outbox;
    this.outbox = [];
    // Packed as they go out: a folded call's arguments grow until then.
    for (const c of calls) c.args = pack(c.args) as unknown[];
    if (!this.stopped) this.worker.postMessage(calls);
  };

  private answers(rs: Reply[]): void {
    for (const r of rs) this.answer(r);
  }

  /** An answer to a call, or a notice (id 0) of task events announced after their write's answer. */
  private answer(r: Reply): void {
    // What the thread announced is heard before the answer it came with resolves.
    this.links.get(r.store)?.answered(r);
    const w = this.waiting.get(r.id);
    if (!w) return;
    this.waiting.delete(r.id);
    if (this.waiting.size === 0) this.worker.unref();
    if (r.ok) w.resolve(revive(r.value));
    else w.reject(errorIn(r.error));
  }

  private stop(error: Error): void {
    if (this.stopped) return;
    this.stopped = error;
    if (shared === this) shared = null;
    for (const w of this.waiting.values()) w.reject(unavailable(error));
    this.waiting.clear();
    for (const link of this.links.values()) link.stopped(error);
    this.links.clear();
  }

  /** Stops the thread (what a crash would do); for tests of what callers then see. */
  terminate(): Promise<number> {
    return this.worker.terminate();
  }
}

let shared: WriterThread | null = null;

function unavailable(cause: Error): LonghaulError {
  return new LonghaulError("STORE_UNAVAILABLE", `The SQLite store cannot write: ${cause.message}.`, {
    cause,
  });
}

/**
 * The embedded store with its writes off the event loop (ARCHITECTURE §4.1). A writer thread
 * owns the connection that writes: every write method is sent there, runs in the thread's
 * group commit (so its statements and the COMMIT's fsync never block this thread) and
 * resolves here after COMMIT, with the task events it appended announced first. Reads run at
 * once on a connection of this thread: WAL lets them see the last committed state while the
 * writer writes; the reads that must see one state (`snapshot`) run in a read transaction.
 *
 * Which methods are writes is read off `SqlStore` itself (`operationKinds`), so a new write
 * operation goes to the thread without being listed here. One writer thread serves every
 * store of the process.
 */
export class ThreadedSqliteStore extends SqlStore {
  /** This thread's connection: reads, and the rare write whose argument cannot cross (`resealSecrets`). */
  readonly db: Database.Database;
  /** Transactions the writer thread has committed so far for this store (as of its last answer). */
  commits = 0;
  private readonly clock: Clock;
  private readonly tx: Tx;
  private readonly writer: WriterThread;
  private readonly id: number;
  /** Set when a write failed for lack of disk space; cleared once the writer's health probe commits. */
  private storageFull = false;
  /** Set once the writer thread has stopped under this store. */
  private stopped: Error | null = null;
  private closing: Promise<void> | null = null;
  private readonly notifier = new LocalNotifier();
  /** Transactions on this thread's connection run one at a time. */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly s: Record<"begin" | "beginWrite" | "commit" | "rollback", Database.Statement>;
  // The arguments cross when the call goes out, after this turn: later completes still join.
  private readonly completes = new CompleteFold(
    () => this.writer.last(),
    (leases) => this.call<boolean[]>("completeMany", [leases]),
  );

  protected readonly run: Runner = {
    write: () => Promise.reject(new Error("ThreadedSqliteStore sends its writes to the writer thread")),
    snapshot: (op) => this.inTransaction("begin", op),
    read: (op) => op(this.tx),
  };

  constructor(opts: ThreadedSqliteStoreOptions) {
    super();
    mkdirSync(dirname(opts.path), { recursive: true });
    this.db = openDatabase(opts.path);
    this.clock = opts.clock ?? systemClock;
    const effects: Effects = { events: [], work: false };
    this.tx = sqliteTx(new Sql(this.db), this.clock, ulidGenerator(this.clock), effects);
    this.s = {
      begin: this.db.prepare("BEGIN"),
      beginWrite: this.db.prepare("BEGIN IMMEDIATE"),
      commit: this.db.prepare("COMMIT"),
      rollback: this.db.prepare("ROLLBACK"),
    };

    shared ??= new WriterThread();
    this.writer = shared;
    this.id = this.writer.open(
      opts.path,
      { answered: (r) => this.answered(r), stopped: (e) => this.onStopped(e) },
      this.clock.now(),
    );

    for (const [name, kind] of operationKinds()) {
      if (kind !== "write" || Object.hasOwn(ThreadedSqliteStore.prototype, name)) continue;
      (this as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => this.call(name, args);
    }
  }

  private call<T>(method: string, args: unknown[]): Promise<T> {
    if (this.stopped) return Promise.reject(unavailable(this.stopped));
    const p = this.writer.call<T>(this.id, method, args, this.clock.now());
    if (this.storageFull) return p;
    return p.catch((err: unknown) => {
      if (err instanceof LonghaulError && err.code === "STORAGE_FULL") this.storageFull = true;
      throw err;
    });
  }

  private answered(r: Reply): void {
    if (r.commits !== undefined) this.commits = r.commits;
    if (r.events) {
      const { tenants, seqs } = r.events;
      for (let i = 0; i < seqs.length; i++) this.notifier.announce(tenants[i]!, seqs[i]!);
    }
    if (r.work) this.notifier.wake();
  }

  private onStopped(error: Error): void {
    this.stopped ??= error;
  }

  /** `op` in a transaction of this thread's connection, never two at once. */
  private inTransaction<T>(begin: "begin" | "beginWrite", op: (tx: Tx) => Promise<T>): Promise<T> {
    const run = async () => {
      this.s[begin].run();
      try {
        const v = await op(this.tx);
        this.s.commit.run();
        return v;
      } catch (err) {
        if (this.db.inTransaction) this.s.rollback.run();
        throw err;
      }
    };
    const result = this.chain.then(run, run);
    this.chain = result.catch(() => undefined);
    return result;
  }

  /**
   * The one write whose argument is a function, which cannot cross to the thread: it runs on
   * this connection in a transaction of its own, which SQLite serializes with the writer's.
   * It appends no task event and enqueues nothing.
   */
  override resealSecrets(reseal: (stored: string) => string, metaKeys: readonly string[]) {
    return this.inTransaction("beginWrite", (tx) => outbound.resealSecrets(tx, reseal, metaKeys));
  }

  claim(owner: string, limit: number, leaseMs: number): Promise<WorkItem[]> {
    return this.call("claim", [owner, limit, leaseMs]);
  }
  /**
   * Sent folded (`CompleteFold`): calls made one after another cross as one `completeMany`
   * (one DELETE on the thread), whose answer says lease by lease whether it held its item.
   */
  override complete(lease: Lease): Promise<void> {
    return this.completes.complete(lease);
  }
  releaseOrphanedLeases(): Promise<number> {
    return this.call("releaseOrphanedLeases", []);
  }
  inboxForJobs(provider: string, externalIds: string[]) {
    return this.run.read((tx) => inboxForJobs(tx, provider, externalIds));
  }
  /**
   * "ok" at once while writes commit; after a write refused for lack of disk space, the
   * writer's own answer (it tries a write that needs room) until it says "ok" again.
   */
  async health(): Promise<"ok" | "degraded" | "full"> {
    if (this.stopped || !this.db.open) return "degraded";
    if (!this.storageFull) return "ok";
    const h = await this.call<"ok" | "degraded" | "full">("health", []);
    if (h === "ok") this.storageFull = false;
    return h;
  }
  migrate(): Promise<{ from: number; to: number }> {
    return this.call("migrate", []);
  }
  onWork(fn: () => void): () => void {
    return this.notifier.onWork(fn);
  }
  onTaskEvents(fn: (tenantId: string, seq: number) => void): () => void {
    return this.notifier.onTaskEvents(fn);
  }
  /** Lets every write sent so far commit, closes the store's connections. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.stopped) await this.call("close", []).catch(() => undefined);
      this.stopped ??= new Error("the store is closed");
      await this.chain;
      if (this.db.open) this.db.close();
    })();
    return this.closing;
  }
}

/**
 * The writer thread, from the compiled file next to this one. Run from source (tests, `tsx`),
 * a worker does not inherit the TypeScript loader, so it registers tsx before importing.
 */
function startWriter(): Worker {
  if (!import.meta.url.endsWith(".ts")) return new Worker(new URL("./writer-thread.js", import.meta.url));
  const tsx = import.meta.resolve("tsx/esm/api");
  const entry = new URL("./writer-thread.ts", import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(boot, { eval: true });
}
