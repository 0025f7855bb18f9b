import type { Database, Statement } from "better-sqlite3";
import { isStorageFull, storageError } from "./db.ts";

interface Pending {
  op: () => unknown;
  resolve: (v: any) => void;
  reject: (e: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Group commit: every write submitted in one tick runs in one SQLite transaction, so many
 * concurrent requests share one fsync (with `synchronous=FULL`). Each operation runs in its
 * own savepoint, so one that throws is rolled back alone and rejects alone; the others
 * commit. Promises resolve only after COMMIT returns, that is, once the data is durable
 * (ARCHITECTURE §3.1).
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
  private scheduled = false;
  /** The running flush, until it has committed or rolled back its last batch. */
  private flushing: Promise<void> | null = null;
  /** Transactions committed so far; lets tests see that a burst shared one. */
  commits = 0;
  private readonly s: Record<
    "begin" | "commit" | "rollback" | "savepoint" | "release" | "rollbackTo",
    Statement
  >;

  constructor(
    private readonly db: Database,
    private readonly maxBatch = 512,
  ) {
    this.s = {
      begin: db.prepare("BEGIN IMMEDIATE"),
      commit: db.prepare("COMMIT"),
      rollback: db.prepare("ROLLBACK"),
      savepoint: db.prepare("SAVEPOINT op"),
      release: db.prepare("RELEASE op"),
      rollbackTo: db.prepare("ROLLBACK TO op"),
    };
  }

  run<T>(op: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.flushing = this.flush().finally(() => {
        this.flushing = null;
        // Writes submitted after the last batch was taken, while the flush was ending.
        if (this.queue.length > 0) this.schedule();
      });
    });
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
        results = await this.runBatch(batch);
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
      batch.forEach((p, i) => {
        const r = results[i]!;
        if (r.ok) p.resolve(r.value);
        else p.reject(storageError(r.error));
      });
    }
  }

  private rollback(): void {
    try {
      if (this.db.inTransaction) this.s.rollback.run();
    } catch {
      // SQLite rolls back by itself when it cannot go on; the batch is rejected either way.
    }
  }

  /** Runs each operation in its savepoint; throws when the whole transaction is lost. */
  private async runBatch(batch: Pending[]): Promise<Outcome[]> {
    this.s.begin.run();
    const results: Outcome[] = [];
    for (const p of batch) {
      this.s.savepoint.run();
      try {
        const value = await p.op();
        this.s.release.run();
        results.push({ ok: true, value });
      } catch (error) {
        // A full disk can fail a statement that spills pages, and SQLite may then have rolled
        // back the whole transaction: the rest of the batch must not run outside of it.
        if (isStorageFull(error) || !this.db.inTransaction) throw error;
        this.s.rollbackTo.run();
        this.s.release.run();
        results.push({ ok: false, error });
      }
    }
    return results;
  }
}
