import { LonghaulError } from "../../core/errors.ts";
import { type AfterFailure, afterFailure, type WorkItemStatus, workItemMove } from "../../core/work-item.ts";
import { toWorkItem, type WorkRow } from "../rows.ts";
import type { Tx } from "../sql/tx.ts";
import type { Lease, QueueKindStats, WorkItem } from "../store.ts";

/*
 * The work queue's operations, written once (ARCHITECTURE §3.4). Claiming and inserting stay
 * with each dialect (`claim`, `Tx.enqueue`): SKIP LOCKED against SQLite's single writer, and
 * PostgreSQL's one-statement batches.
 */

/** The state of an item under a lease (`assertLease`): every move written below starts from it. */
const HELD = "leased" satisfies WorkItemStatus;

/** The error a stale lease's holder sees (ARCHITECTURE §3.4). */
export const leaseLost = (lease: Lease) =>
  new LonghaulError(
    "LEASE_LOST",
    `Work item ${lease.itemId} is no longer leased to ${lease.owner}; its result is discarded.`,
  );

/**
 * Throws LEASE_LOST unless `lease` still holds its item (fencing, ARCHITECTURE §3.4).
 * Locks: the item's row until the end of the transaction (PostgreSQL), so lease recovery
 * cannot hand it to another worker while this one is finishing it.
 */
export async function assertLease(tx: Tx, lease: Lease): Promise<void> {
  const held =
    /^\d{1,15}$/.test(lease.itemId) &&
    (await tx.get(
      `SELECT 1 FROM work_items WHERE id = ? AND lease_owner = ? AND status = 'leased'${tx.d.forUpdate}`,
      [Number(lease.itemId), lease.owner],
    ));
  if (!held) throw leaseLost(lease);
}

/**
 * Deletes the item of a lease the caller has already asserted. Wakes the workers when an
 * item of the same concurrency key may have been waiting for this one.
 */
export async function removeItem(tx: Tx, lease: Lease): Promise<void> {
  const r = await tx.get<{ concurrency_key: string | null }>(
    "DELETE FROM work_items WHERE id = ? RETURNING concurrency_key",
    [Number(lease.itemId)],
  );
  if (r?.concurrency_key != null) tx.wake();
}

/** Deletes a finished item. LEASE_LOST unless `lease` still holds it. */
export async function complete(tx: Tx, lease: Lease): Promise<void> {
  await assertLease(tx, lease);
  await removeItem(tx, lease);
}

/** Pushes a held lease's expiry to now + `leaseMs`. Locks: the item. LEASE_LOST. */
export async function extendLease(tx: Tx, lease: Lease, leaseMs: number): Promise<void> {
  await assertLease(tx, lease);
  await tx.run("UPDATE work_items SET lease_expires_at = ? WHERE id = ?", [
    tx.clock.now() + leaseMs,
    Number(lease.itemId),
  ]);
}

/**
 * Returns an item to the queue, or deletes it when a pending twin already covers its dedupe
 * key (the twin is then due at the earlier time). Under PostgreSQL a twin inserted by another
 * transaction after the check makes the UPDATE violate `work_dedupe`; the runner then retries
 * the operation, which finds the twin.
 */
async function requeue(tx: Tx, id: number, runAt: number, error: string | null, wake = true): Promise<void> {
  const twin = await tx.get<{ id: number }>(
    `UPDATE work_items SET run_at = ${tx.d.least}(run_at, ?)
      WHERE dedupe_key = (SELECT dedupe_key FROM work_items WHERE id = ?) AND status = 'pending'
      RETURNING id`,
    [runAt, id],
  );
  if (twin) {
    await tx.run("DELETE FROM work_items WHERE id = ?", [id]);
  } else {
    await tx.run(
      `UPDATE work_items SET status = 'pending', run_at = ?, lease_owner = NULL, lease_expires_at = NULL,
         last_error = COALESCE(?, last_error), updated_at = ? WHERE id = ?`,
      [runAt, error, tx.clock.now(), id],
    );
  }
  if (wake) tx.wake();
}

/** Writes what `afterFailure` decided for the leased item `id`. */
async function settle(tx: Tx, id: number, plan: AfterFailure, error: string): Promise<void> {
  if (plan.to === "dead") await deadLetter(tx, id, error);
  else await requeue(tx, id, plan.runAt, error);
}

/** Moves an item to the dead letter; its dedupe key is freed for new work. */
async function deadLetter(tx: Tx, id: number, error: string): Promise<void> {
  await tx.run(
    `UPDATE work_items SET status = 'dead', lease_owner = NULL, lease_expires_at = NULL, last_error = ?,
       dedupe_key = NULL, updated_at = ? WHERE id = ?`,
    [error, tx.clock.now(), id],
  );
}

/**
 * Gives a leased item back without counting the attempt, marked parked: it waits for its
 * tenant's quota, and is woken early when a slot frees or the quotas change (`wakeParked`).
 * Not a wake-up itself: the item is not due before `runAt`.
 */
export async function park(tx: Tx, lease: Lease, runAt: number): Promise<void> {
  await assertLease(tx, lease);
  workItemMove(HELD, "pending");
  const id = Number(lease.itemId);
  await requeue(tx, id, runAt, null, false);
  await tx.run(
    `UPDATE work_items SET parked = ${tx.d.true}, attempts = ${tx.d.greatest}(0, attempts - 1)
      WHERE id = ? AND status = 'pending'`,
    [id],
  );
}

/**
 * Gives a leased item back until `runAt` without counting the attempt, and not parked (nothing
 * wakes it early): a provider's rate limit, which says when to come back. Keeps `error` as the
 * item's last error.
 */
export async function deferUncounted(tx: Tx, lease: Lease, runAt: number, error: string): Promise<void> {
  await assertLease(tx, lease);
  workItemMove(HELD, "pending");
  const id = Number(lease.itemId);
  await requeue(tx, id, runAt, error, false);
  await tx.run(
    `UPDATE work_items SET attempts = ${tx.d.greatest}(0, attempts - 1) WHERE id = ? AND status = 'pending'`,
    [id],
  );
}

/** A failed attempt: the item retries at `retryAt`, or goes to the dead letter after its last attempt. */
export async function fail(tx: Tx, lease: Lease, error: string, retryAt: number): Promise<"retry" | "dead"> {
  await assertLease(tx, lease);
  const id = Number(lease.itemId);
  const row = (await tx.get<{ attempts: number; max_attempts: number }>(
    "SELECT attempts, max_attempts FROM work_items WHERE id = ?",
    [id],
  ))!;
  const plan = afterFailure({ status: HELD, attempts: row.attempts, maxAttempts: row.max_attempts }, retryAt);
  await settle(tx, id, plan, error);
  return plan.to === "dead" ? "dead" : "retry";
}

/**
 * Returns expired leases to the queue, or to the dead letter after their last attempt.
 * Under PostgreSQL, items whose holder is finishing them right now (row locked) are left for
 * the next pass. One at a time: two expired items may share a dedupe key, and the second
 * must find the first as its twin.
 */
export async function recoverExpiredLeases(tx: Tx): Promise<number> {
  const now = tx.clock.now();
  const expired = await tx.all<{ id: number; attempts: number; max_attempts: number; lease_owner: string }>(
    `SELECT id, attempts, max_attempts, lease_owner FROM work_items
      WHERE status = '${HELD}' AND lease_expires_at <= ? ORDER BY id${tx.d.skipLocked}`,
    [now],
  );
  for (const e of expired) {
    const plan = afterFailure({ status: HELD, attempts: e.attempts, maxAttempts: e.max_attempts }, now);
    await settle(tx, e.id, plan, `lease of ${e.lease_owner} expired`);
  }
  return expired.length;
}

/** When the next pending item is due, or null when none is pending. */
export async function nextRunAt(tx: Tx): Promise<number | null> {
  const r = await tx.get<{ t: number | null }>(
    "SELECT MIN(run_at) AS t FROM work_items WHERE status = 'pending'",
  );
  return r?.t ?? null;
}

/**
 * The pending items of each kind and the `run_at` of the oldest one due at `now` (null when
 * none is due yet), in one statement: what a metrics scrape reads. No locks.
 */
export async function queueStats(tx: Tx, now: number): Promise<QueueKindStats[]> {
  const rows = await tx.all<{ kind: string; depth: number; oldest_due: number | null }>(
    `SELECT kind, COUNT(*) AS depth, MIN(CASE WHEN run_at <= ? THEN run_at END) AS oldest_due
     FROM work_items WHERE status = 'pending' GROUP BY kind`,
    [now],
  );
  return rows.map((r) => ({
    kind: r.kind,
    depth: Number(r.depth),
    oldestDueAt: r.oldest_due === null ? null : Number(r.oldest_due),
  }));
}

/** The newest dead-lettered items. */
export async function deadItems(tx: Tx, limit: number): Promise<WorkItem[]> {
  const rows = await tx.all<WorkRow>(
    "SELECT * FROM work_items WHERE status = 'dead' ORDER BY id DESC LIMIT ?",
    [limit],
  );
  return rows.map(toWorkItem);
}
