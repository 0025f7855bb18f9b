import type { Database, Statement } from "better-sqlite3";
import { isStorageFull, storageError } from "./db.ts";

interface Pending {
  op: () => unknown;
  resolve: (v: any) => void;
  reject: (e: unknown) => void;
  /** Answered at COMMIT, before the WAL's sync (a write whose loss to a power cut is harmless). */
  atCommit: boolean;
  /** Called once the write, committed, is on disk (or with the error of the sync that failed). */
  durable: ((err?: unknown) => void)[];
  /** Called right after COMMIT; true when it told someone, who may act before the sync. */
  committed: (() => boolean) | undefined;
}

export interface RunOptions {
  atCommit?: boolean;
  committed?: () => boolean;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Group commit: every write submitted in one tick runs in one SQLite transaction, so many
 * concurrent requests share one fsync of the WAL (made by SQLite at COMMIT with
 * `synchronous=FULL`, or by this class after COMMIT, pipelined with the next batch). An
 * operation that throws is rolled back alone and rejects alone; the others commit. A batch
 * first runs without savepoints (two statements per operation saved); if an operation throws,
 * the transaction is rolled back and, unless that operation was the batch's only one, the
 * batch runs again with a savepoint around each operation, which is what rolls the failing one
 * back alone. Operations are therefore written to be run again: they act only through their Tx
 * (and `whenDurable`, reset for the re-run). Promises resolve only once the data is durable:
 * after COMMIT, and after the WAL's sync when this class makes it (ARCHITECTURE §3.1).
 *
 * Operations are async functions (they are shared with PostgreSQL), awaited one after
 * another: BEGIN IMMEDIATE, then SAVEPOINT, the operation, RELEASE or ROLLBACK TO for each,
 * then COMMIT. An operation awaits only its Tx, whose SQLite calls resolve at once, so the
 * batch still runs without yielding to timers or I/O. Writes submitted meanwhile wait for the
 * next batch of the same flush: there is never a second flush while one runs, and `settled`
 * lets reads on the same connection wait until the batch has committed.
 */
export class GroupCommit {
  private queue: Pending[] = [];
  /** The operation running in the open batch. */
  private running: Pending | null = null;
  private scheduled = false;
  /**
   * The queued writes wait for the sync in flight to end before they commit: each would wait
   * for the next sync anyway, and one COMMIT for all of them writes each page once.
   */
  private deferred = false;
  /** The running flush, until it has committed or rolled back its last batch. */
  private flushing: Promise<void> | null = null;
  /** Transactions committed so far; lets tests see that a burst shared one. */
  commits = 0;
  /** Batches run a second time, with savepoints, because an operation threw in the first run. */
  rerun = 0;
  private readonly s: Record<
    "begin" | "commit" | "rollback" | "savepoint" | "release" | "rollbackTo",
    Statement
  >;

  /**
   * Pipelined durability: set when the connection commits without syncing (`synchronous =
   * NORMAL`) and this class syncs the WAL itself. Each batch is answered once a sync of the
   * WAL begun after its COMMIT has returned: one sync covers every batch committed before it
   * began. The next batch runs while that sync is in flight, or waits for its end
   * (`waitsForSync`).
   */
  private readonly syncWal: (() => Promise<void>) | null;
  /**
   * The same sync, made in place: used when nothing could run meanwhile (no write waiting, no
   * sync in flight, nobody told of the batch at COMMIT), where a hop to the thread pool and
   * back only adds to the wait.
   */
  private readonly syncWalNow: (() => void) | null;
  /** Batches committed and not yet covered by a sync. */
  private unsynced: ((err?: unknown) => void)[] = [];
  private syncing: Promise<void> | null = null;

  /** Called before each batch's BEGIN: ends a read transaction left open on the connection. */
  private readonly beforeBegin: (() => void) | null;
  /** True while nobody would act on a batch between its COMMIT and its sync (`waitsForSync`). */
  private readonly mayWait: () => boolean;

  constructor(
    private readonly db: Database,
    private readonly maxBatch = 512,
    opts: {
      syncWal?: () => Promise<void>;
      syncWalNow?: () => void;
      beforeBegin?: () => void;
      mayWait?: () => boolean;
    } = {},
  ) {
    this.syncWal = opts.syncWal ?? null;
    this.syncWalNow = opts.syncWalNow ?? null;
    this.beforeBegin = opts.beforeBegin ?? null;
    this.mayWait = opts.mayWait ?? (() => true);
    this.s = {
      begin: db.prepare("BEGIN IMMEDIATE"),
      commit: db.prepare("COMMIT"),
      rollback: db.prepare("ROLLBACK"),
      savepoint: db.prepare("SAVEPOINT op"),
      release: db.prepare("RELEASE op"),
      rollbackTo: db.prepare("ROLLBACK TO op"),
    };
  }

  /**
   * Runs `op` in the next batch. With `atCommit`, it is answered as soon as its batch has
   * committed, without waiting for the WAL's sync: for a write whose loss to a power cut
   * harms nothing (a claim: SQLite hands every lease back at start anyway). For a write
   * that succeeded, `committed` is called right after COMMIT, before the WAL's sync (to
   * signal work it made due: a claim runs in a later batch, so it sees the work committed).
   */
  run<T>(op: () => T | Promise<T>, opts: RunOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({
        op,
        resolve,
        reject,
        atCommit: opts.atCommit === true,
        durable: [],
        committed: opts.committed,
      });
      this.schedule(opts.atCommit === true);
    });
  }

  /** `now`: a write answered at COMMIT is queued, which never waits for a sync. */
  private schedule(now = false): void {
    if (this.deferred && !now && this.mayWait()) return;
    this.deferred = false;
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      if (this.waitsForSync()) {
        this.scheduled = false;
        this.deferred = true;
        return;
      }
      this.flushing = this.flush().finally(() => {
        this.flushing = null;
        // Writes submitted after the last batch was taken, while the flush was ending.
        if (this.queue.length > 0) this.schedule();
      });
    });
  }

  /**
   * The last write queued and not yet taken into a batch (an opaque mark), or undefined: a
   * caller that remembers the mark of its write may still add work to it while it is last.
   */
  last(): unknown {
    return this.queue.at(-1);
  }

  /**
   * For the operation running now: `fn` is called once its write is on disk, after the WAL's
   * sync that covers it (or with that sync's error), even if it was answered at COMMIT, whose
   * batch is then synced. Dropped if the operation is rolled back. What a write answered at
   * COMMIT must not announce before it is durable (its task events) waits here.
   */
  whenDurable(fn: (err?: unknown) => void): void {
    if (!this.running) throw new Error("whenDurable is called from a running operation");
    this.running.durable.push(fn);
  }

  /** Resolves once no batch is open: what a read on this connection sees is committed. */
  settled(): Promise<void> | undefined {
    return this.flushing ?? undefined;
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      let results: Outcome[];
      try {
        const first = await this.runBatch(batch, false);
        if (!Array.isArray(first) && batch.length === 1) {
          // The batch's only operation threw: nothing of it may commit, and nothing else ran.
          this.rollback();
          batch[0]!.reject(storageError(first.threw));
          continue;
        }
        results = Array.isArray(first) ? first : await this.runAgain(batch);
        this.s.commit.run();
        this.commits++;
      } catch (error) {
        // The batch could not run whole, or the COMMIT itself failed (disk full, I/O error):
        // nothing in it is durable.
        this.rollback();
        const mapped = storageError(error);
        for (const p of batch) p.reject(mapped);
        continue;
      }
      const answer = (which: (p: Pending) => boolean, err?: unknown) =>
        batch.forEach((p, i) => {
          if (!which(p)) return;
          const r = results[i]!;
          if (err) p.reject(storageError(err));
          else if (r.ok) p.resolve(r.value);
          else p.reject(storageError(r.error));
        });
      /** The writes not yet answered, and every succeeded write's `durable`, once on disk. */
      const synced = (err?: unknown) => {
        answer((p) => !p.atCommit, err);
        batch.forEach((p, i) => {
          if (results[i]!.ok) for (const fn of p.durable) fn(err);
        });
      };
      // The signals of the batch's writes, made now, right after COMMIT (`committed`), and
      // whether anyone hears of the batch before its sync: a signal, or an answer at COMMIT.
      let heard = false;
      batch.forEach((p, i) => {
        if (p.atCommit) heard = true;
        if (p.committed && results[i]!.ok && p.committed()) heard = true;
      });
      if (this.syncWal) {
        answer((p) => p.atCommit);
        // A batch of claims alone waits for no sync and starts none: the next write's sync
        // covers its COMMIT too, before that write is answered.
        if (!batch.some((p) => !p.atCommit || p.durable.length > 0)) continue;
        // In place only when nothing could run meanwhile: no write waiting, no sync in flight,
        // and nobody heard of the batch, who would act on it (a claim of the work it made due,
        // the next write of a task it began) while the sync runs off the loop.
        if (this.syncWalNow && !this.syncing && this.queue.length === 0 && !heard) {
          let error: unknown;
          try {
            this.syncWalNow();
          } catch (err) {
            error = err;
          }
          synced(error);
        } else {
          this.afterCommit(synced);
        }
      } else {
        // No WAL to sync (SQLite syncs at COMMIT, or an in-memory database): durable now.
        answer((p) => p.atCommit);
        synced();
      }
    }
  }

  /**
   * True when the queued writes should commit only once the sync in flight has ended: each of
   * them is answered after a sync begun after its COMMIT, which cannot begin before then, so
   * waiting costs them nothing, and the writes of several turns commit together (fewer
   * COMMITs, each hot page written to the WAL once instead of once per turn). Not for a write
   * answered at COMMIT (a claim), nor for a full batch, nor while someone would act on a
   * batch as soon as it commits (`mayWait` false: a worker in the process, which claims the
   * work a write made due and makes the next write of its task while the sync runs).
   */
  private waitsForSync(): boolean {
    return (
      this.syncing !== null &&
      this.queue.length < this.maxBatch &&
      !this.queue.some((p) => p.atCommit) &&
      this.mayWait()
    );
  }

  /** Answers the batch once a sync of the WAL that begins after its COMMIT has returned. */
  private afterCommit(answer: (err?: unknown) => void): void {
    this.unsynced.push(answer);
    if (!this.syncing) this.syncing = this.sync();
  }

  private async sync(): Promise<void> {
    while (this.unsynced.length > 0) {
      const covered = this.unsynced;
      this.unsynced = [];
      let error: unknown;
      try {
        await this.syncWal!();
      } catch (err) {
        // Committed but perhaps not on disk: the callers are told it failed (a retry is
        // deduplicated by its key), never that it is durable.
        error = err;
      }
      for (const answer of covered) answer(error);
    }
    this.syncing = null;
    // The writes that waited for this sync commit now, and start the next one.
    if (this.deferred) this.schedule(true);
  }

  private rollback(): void {
    try {
      if (this.db.inTransaction) this.s.rollback.run();
    } catch {
      // SQLite rolls back by itself when it cannot go on; the batch is rejected either way.
    }
  }

  /**
   * An operation threw in the batch's first run, with the others' writes in the same
   * transaction: all are rolled back, and the batch runs again, each operation in its savepoint.
   */
  private async runAgain(batch: Pending[]): Promise<Outcome[]> {
    this.rollback();
    this.rerun++;
    for (const p of batch) p.durable = [];
    return (await this.runBatch(batch, true)) as Outcome[];
  }

  /**
   * Runs the batch's operations in one transaction; throws when the whole transaction is lost.
   * Without `savepoints`, the first operation that throws ends the run, with what it threw.
   * With them, each runs in its savepoint and one that throws is rolled back alone.
   */
  private async runBatch(batch: Pending[], savepoints: boolean): Promise<Outcome[] | { threw: unknown }> {
    this.beforeBegin?.();
    this.s.begin.run();
    const results: Outcome[] = [];
    for (const p of batch) {
      if (savepoints) this.s.savepoint.run();
      this.running = p;
      try {
        const value = await p.op();
        if (savepoints) this.s.release.run();
        results.push({ ok: true, value });
      } catch (error) {
        p.durable = [];
        // A full disk can fail a statement that spills pages, and SQLite may then have rolled
        // back the whole transaction: the rest of the batch must not run outside of it.
        if (isStorageFull(error) || !this.db.inTransaction) throw error;
        if (!savepoints) return { threw: error };
        this.s.rollbackTo.run();
        this.s.release.run();
        results.push({ ok: false, error });
      } finally {
        this.running = null;
      }
    }
    return results;
  }
}
