import type { Database } from "better-sqlite3";

interface Pending {
  op: (db: Database) => unknown;
  resolve: (v: any) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit: every write submitted in one tick runs in one SQLite transaction, so many
 * concurrent requests share one fsync (with `synchronous=FULL`). Each operation runs in its
 * own savepoint, so one that throws is rolled back alone and rejects alone; the others
 * commit. Promises resolve only after COMMIT returns, that is, once the data is durable
 * (ARCHITECTURE §3.1).
 */
export class GroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;
  /** Transactions committed so far; lets tests see that a burst shared one. */
  commits = 0;
  private readonly runBatch: (batch: Pending[]) => unknown[];

  constructor(
    db: Database,
    private readonly maxBatch = 512,
  ) {
    const savepoint = (p: Pending) => db.transaction(() => p.op(db));
    this.runBatch = db.transaction((batch: Pending[]) =>
      batch.map((p) => {
        try {
          return { ok: true, value: savepoint(p)() };
        } catch (error) {
          return { ok: false, error };
        }
      }),
    ) as unknown as (batch: Pending[]) => unknown[];
  }

  run<T>(op: (db: Database) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      let results: { ok: boolean; value?: unknown; error?: unknown }[];
      try {
        results = this.runBatch(batch) as typeof results;
        this.commits++;
      } catch (error) {
        // The COMMIT itself failed (disk full, I/O error): nothing in the batch is durable.
        for (const p of batch) p.reject(error);
        continue;
      }
      batch.forEach((p, i) => {
        const r = results[i]!;
        if (r.ok) p.resolve(r.value);
        else p.reject(r.error);
      });
    }
  }
}
