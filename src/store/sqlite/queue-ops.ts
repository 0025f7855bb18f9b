import { LonghaulError } from "../../core/errors.ts";
import { json } from "../json.ts";
import { toWorkItem, type WorkRow } from "../rows.ts";
import type { Lease, NewWorkItem, WorkItem } from "../store.ts";
import { defaultMaxAttempts } from "../work-items.ts";
import type { Ctx } from "./db.ts";

/**
 * Inserts work items. A dedupe key already held by a pending item keeps one item, due at
 * the earlier of the two times (so a resume never waits behind a retry's backoff).
 */
export function enqueue(c: Ctx, items: readonly NewWorkItem[]): void {
  const now = c.clock.now();
  for (const it of items) {
    c.sql.run(
      `INSERT INTO work_items (kind, tenant_id, payload, status, run_at, priority, attempts, max_attempts,
         dedupe_key, concurrency_key, created_at, updated_at)
       VALUES (?, ?, ?, 'pending', ?, ?, 0, ?, ?, ?, ?, ?)
       ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status = 'pending'
       DO UPDATE SET run_at = MIN(run_at, excluded.run_at), updated_at = excluded.updated_at`,
      it.kind,
      it.tenantId,
      json(it.payload),
      it.runAt ?? now,
      it.priority ?? 0,
      it.maxAttempts ?? defaultMaxAttempts[it.kind],
      it.dedupeKey ?? null,
      it.concurrencyKey ?? null,
      now,
      now,
    );
  }
}

/** Throws LEASE_LOST unless `lease` still holds its item (fencing, ARCHITECTURE §3.4). */
export function assertLease(c: Ctx, lease: Lease): void {
  const held = c.sql.get(
    "SELECT 1 FROM work_items WHERE id = ? AND lease_owner = ? AND status = 'leased'",
    Number(lease.itemId),
    lease.owner,
  );
  if (!held) {
    throw new LonghaulError(
      "LEASE_LOST",
      `Work item ${lease.itemId} is no longer leased to ${lease.owner}; its result is discarded.`,
    );
  }
}

/** Deletes a finished item. */
export function complete(c: Ctx, lease: Lease): void {
  assertLease(c, lease);
  c.sql.run("DELETE FROM work_items WHERE id = ?", Number(lease.itemId));
}

export function extendLease(c: Ctx, lease: Lease, leaseMs: number): void {
  assertLease(c, lease);
  c.sql.run(
    "UPDATE work_items SET lease_expires_at = ? WHERE id = ?",
    c.clock.now() + leaseMs,
    Number(lease.itemId),
  );
}

export function claim(c: Ctx, owner: string, limit: number, leaseMs: number): WorkItem[] {
  const now = c.clock.now();
  const candidates = roundRobin(
    c.sql.all<{ id: number; tenant_id: string | null; concurrency_key: string | null }>(
      `SELECT id, tenant_id, concurrency_key FROM work_items
        WHERE status = 'pending' AND run_at <= ?
        ORDER BY priority DESC, run_at, id LIMIT ?`,
      now,
      limit * 8,
    ),
  );
  const out: WorkItem[] = [];
  const keys = new Set<string>();
  for (const cand of candidates) {
    if (out.length >= limit) break;
    const key = cand.concurrency_key;
    if (key !== null) {
      // An expired lease still blocks its key until recoverExpiredLeases hands it back, so a
      // stalled holder is fenced off before anyone else may start (ARCHITECTURE §3.4).
      if (keys.has(key)) continue;
      const busy = c.sql.get("SELECT 1 FROM work_items WHERE concurrency_key = ? AND status = 'leased'", key);
      if (busy) continue;
      keys.add(key);
    }
    const row = c.sql.get<WorkRow>(
      `UPDATE work_items SET status = 'leased', lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1,
         updated_at = ? WHERE id = ? RETURNING *`,
      owner,
      now + leaseMs,
      now,
      cand.id,
    );
    if (row) out.push(toWorkItem(row));
  }
  return out;
}

/**
 * Fairness across tenants (ARCHITECTURE §4.2): due items are taken one per tenant in turn, so a
 * burst of one tenant does not fill every worker slot ahead of another tenant's work.
 */
export function roundRobin<T extends { tenant_id: string | null }>(items: T[]): T[] {
  const queues = new Map<string, T[]>();
  for (const it of items) {
    const key = it.tenant_id ?? "";
    const q = queues.get(key);
    if (q) q.push(it);
    else queues.set(key, [it]);
  }
  const out: T[] = [];
  const lanes = [...queues.values()];
  for (let i = 0; out.length < items.length; i++) {
    for (const lane of lanes) {
      const it = lane[i];
      if (it) out.push(it);
    }
  }
  return out;
}

/** Returns an item to the queue, or deletes it when a pending twin already covers its dedupe key. */
function requeue(c: Ctx, id: number, runAt: number, error: string | null): void {
  const row = c.sql.get<{ dedupe_key: string | null }>("SELECT dedupe_key FROM work_items WHERE id = ?", id);
  if (row?.dedupe_key) {
    const twin = c.sql.get<{ id: number }>(
      "SELECT id FROM work_items WHERE dedupe_key = ? AND status = 'pending'",
      row.dedupe_key,
    );
    if (twin) {
      c.sql.run("UPDATE work_items SET run_at = MIN(run_at, ?) WHERE id = ?", runAt, twin.id);
      c.sql.run("DELETE FROM work_items WHERE id = ?", id);
      return;
    }
  }
  c.sql.run(
    `UPDATE work_items SET status = 'pending', run_at = ?, lease_owner = NULL, lease_expires_at = NULL,
       last_error = COALESCE(?, last_error), updated_at = ? WHERE id = ?`,
    runAt,
    error,
    c.clock.now(),
    id,
  );
}

function deadLetter(c: Ctx, id: number, error: string): void {
  c.sql.run(
    `UPDATE work_items SET status = 'dead', lease_owner = NULL, lease_expires_at = NULL, last_error = ?,
       dedupe_key = NULL, updated_at = ? WHERE id = ?`,
    error,
    c.clock.now(),
    id,
  );
}

/**
 * Gives a leased item back without counting the attempt, marked parked: it waits for its
 * tenant's quota, and is woken early when a slot frees or the quotas change.
 */
export function park(c: Ctx, lease: Lease, runAt: number): void {
  assertLease(c, lease);
  const id = Number(lease.itemId);
  requeue(c, id, runAt, null);
  c.sql.run(
    "UPDATE work_items SET parked = 1, attempts = MAX(0, attempts - 1) WHERE id = ? AND status = 'pending'",
    id,
  );
}

export function fail(c: Ctx, lease: Lease, error: string, retryAt: number): "retry" | "dead" {
  assertLease(c, lease);
  const id = Number(lease.itemId);
  const row = c.sql.get<{ attempts: number; max_attempts: number }>(
    "SELECT attempts, max_attempts FROM work_items WHERE id = ?",
    id,
  )!;
  if (row.attempts >= row.max_attempts) {
    deadLetter(c, id, error);
    return "dead";
  }
  requeue(c, id, retryAt, error);
  return "retry";
}

export function recoverExpiredLeases(c: Ctx): number {
  const now = c.clock.now();
  const expired = c.sql.all<{ id: number; attempts: number; max_attempts: number; lease_owner: string }>(
    "SELECT id, attempts, max_attempts, lease_owner FROM work_items WHERE status = 'leased' AND lease_expires_at <= ?",
    now,
  );
  for (const e of expired) {
    const why = `lease of ${e.lease_owner} expired`;
    if (e.attempts >= e.max_attempts) deadLetter(c, e.id, why);
    else requeue(c, e.id, now, why);
  }
  return expired.length;
}

export function releaseOrphanedLeases(c: Ctx): number {
  c.sql.run("UPDATE work_items SET lease_expires_at = ? WHERE status = 'leased'", c.clock.now());
  return recoverExpiredLeases(c);
}

export function nextRunAt(c: Ctx): number | null {
  return (
    c.sql.get<{ t: number | null }>("SELECT MIN(run_at) AS t FROM work_items WHERE status = 'pending'")?.t ??
    null
  );
}

export function deadItems(c: Ctx, limit: number): WorkItem[] {
  return c.sql
    .all<WorkRow>("SELECT * FROM work_items WHERE status = 'dead' ORDER BY id DESC LIMIT ?", limit)
    .map(toWorkItem);
}
