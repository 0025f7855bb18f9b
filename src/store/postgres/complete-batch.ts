import { leaseLost } from "../ops/queue-ops.ts";
import type { Lease } from "../store.ts";
import type { Ctx } from "./db.ts";

/** A work item id as the database holds it; anything else cannot be leased. */
const ITEM_ID = /^\d{1,18}$/;

/**
 * Completes a batch of leases in one statement: the lease checks, the deletes, and the
 * NOTIFY when an item of a concurrency key may have been waiting for one of them. Returns
 * the `id:owner` of every lease whose item it deleted; the others were no longer held.
 */
export async function completeMany(c: Ctx, leases: readonly Lease[]): Promise<Set<string>> {
  const rows = await c.sql.allReplanned<{ id: string; lease_owner: string; concurrency_key: string | null }>(
    `WITH done AS (
       DELETE FROM work_items w
        USING unnest($1::bigint[], $2::text[]) AS l (id, owner)
        WHERE w.id = l.id AND w.lease_owner = l.owner AND w.status = 'leased'
       RETURNING w.id, w.lease_owner, w.concurrency_key
     )
     SELECT id::text AS id, lease_owner, concurrency_key,
            CASE WHEN concurrency_key IS NOT NULL THEN pg_notify($3, $4) END
       FROM done`,
    [leases.map((l) => l.itemId), leases.map((l) => l.owner), c.wake.channel, c.wake.payload],
  );
  if (rows.some((r) => r.concurrency_key !== null)) c.effects.work = true;
  return new Set(rows.map((r) => `${r.id}:${r.lease_owner}`));
}

interface Waiting {
  lease: Lease;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Folds `complete` calls made close together into one statement (`completeMany`).
 *
 * Calls made in one turn of the event loop go out together, after it; calls made while
 * `maxInFlight` batches are on their way wait for one of them to return and go out in the
 * next, as a group commit does. Each caller still gets its own answer: it resolves once the
 * statement that deleted its item has committed (the statement is its own transaction), and
 * rejects with LEASE_LOST when its lease no longer held the item, or with the batch's error.
 * Two calls for one item never share a batch: the second goes in a later one, where it finds
 * the item gone, as it would one after the other.
 */
export class CompleteBatcher {
  private queue: Waiting[] = [];
  private inFlight = 0;
  private scheduled = false;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly send: (leases: readonly Lease[]) => Promise<Set<string>>,
    private readonly opts: { maxInFlight: number; maxBatch: number },
  ) {}

  complete(lease: Lease): Promise<void> {
    if (!ITEM_ID.test(lease.itemId)) return Promise.reject(leaseLost(lease));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ lease, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  /** Resolves once no completion is waiting or on its way. */
  idle(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private flush(): void {
    while (this.queue.length > 0 && this.inFlight < this.opts.maxInFlight) {
      const batch: Waiting[] = [];
      const later: Waiting[] = [];
      const ids = new Set<string>();
      for (const w of this.queue) {
        if (batch.length < this.opts.maxBatch && !ids.has(w.lease.itemId)) {
          ids.add(w.lease.itemId);
          batch.push(w);
        } else later.push(w);
      }
      this.queue = later;
      this.inFlight++;
      this.send(batch.map((w) => w.lease))
        .then(
          (done) => {
            for (const w of batch) {
              if (done.has(`${w.lease.itemId}:${w.lease.owner}`)) w.resolve();
              else w.reject(leaseLost(w.lease));
            }
          },
          (err: unknown) => {
            for (const w of batch) w.reject(err);
          },
        )
        .finally(() => {
          this.inFlight--;
          this.flush();
          if (this.queue.length === 0 && this.inFlight === 0) {
            const waiters = this.idleWaiters;
            this.idleWaiters = [];
            for (const resolve of waiters) resolve();
          }
        });
    }
  }
}
