import { LonghaulError } from "../../core/errors.ts";
import { json } from "../json.ts";
import { toWorkItem, type WorkRow } from "../rows.ts";
import type { Lease, NewWorkItem, WorkItem, WorkKind } from "../store.ts";
import { defaultMaxAttempts } from "../work-items.ts";
import type { Ctx } from "./db.ts";

/**
 * Inserts work items in one statement. A dedupe key already held by a pending item keeps
 * one item, due at the earlier of the two times (so a resume never waits behind a retry's
 * backoff). Marks the transaction as making work due.
 */
export async function enqueue(c: Ctx, items: readonly NewWorkItem[]): Promise<void> {
  if (items.length === 0) return;
  const now = c.clock.now();
  const rows = mergeByDedupeKey(items, now);
  await c.sql.run(
    `INSERT INTO work_items (kind, tenant_id, payload, status, run_at, priority, attempts, max_attempts,
       dedupe_key, concurrency_key, created_at, updated_at)
     SELECT i.kind, i.tenant_id, i.payload, 'pending', i.run_at, i.priority, 0, i.max_attempts,
            i.dedupe_key, i.concurrency_key, $9, $9
       FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::integer[], $6::integer[],
                   $7::text[], $8::text[])
              WITH ORDINALITY AS i (kind, tenant_id, payload, run_at, priority, max_attempts,
                                    dedupe_key, concurrency_key, n)
      ORDER BY i.n
     ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status = 'pending'
     DO UPDATE SET run_at = LEAST(work_items.run_at, excluded.run_at), updated_at = excluded.updated_at`,
    [
      rows.map((r) => r.kind),
      rows.map((r) => r.tenantId),
      rows.map((r) => json(r.payload)),
      rows.map((r) => r.runAt),
      rows.map((r) => r.priority),
      rows.map((r) => r.maxAttempts),
      rows.map((r) => r.dedupeKey),
      rows.map((r) => r.concurrencyKey),
      now,
    ],
  );
  c.effects.work = true;
}

interface WorkInsert {
  kind: WorkKind;
  tenantId: string | null;
  payload: Record<string, unknown>;
  runAt: number;
  priority: number;
  maxAttempts: number;
  dedupeKey: string | null;
  concurrencyKey: string | null;
}

/**
 * One INSERT … ON CONFLICT may not touch a row twice, so items of one batch that share a
 * dedupe key become one first: the first item, due at the earliest time, as inserting them
 * one by one would leave it.
 */
function mergeByDedupeKey(items: readonly NewWorkItem[], now: number): WorkInsert[] {
  const out: WorkInsert[] = [];
  const byKey = new Map<string, WorkInsert>();
  for (const it of items) {
    const row: WorkInsert = {
      kind: it.kind,
      tenantId: it.tenantId,
      payload: it.payload,
      runAt: it.runAt ?? now,
      priority: it.priority ?? 0,
      maxAttempts: it.maxAttempts ?? defaultMaxAttempts[it.kind],
      dedupeKey: it.dedupeKey ?? null,
      concurrencyKey: it.concurrencyKey ?? null,
    };
    const first = row.dedupeKey === null ? undefined : byKey.get(row.dedupeKey);
    if (first) {
      first.runAt = Math.min(first.runAt, row.runAt);
      continue;
    }
    if (row.dedupeKey !== null) byKey.set(row.dedupeKey, row);
    out.push(row);
  }
  return out;
}

/**
 * Throws LEASE_LOST unless `lease` still holds its item (fencing, ARCHITECTURE §3.4). Locks the
 * item until the end of the transaction, so lease recovery cannot hand it to another worker
 * while this one is finishing it.
 */
export async function assertLease(c: Ctx, lease: Lease): Promise<void> {
  const held =
    /^\d{1,18}$/.test(lease.itemId) &&
    (await c.sql.get(
      "SELECT 1 FROM work_items WHERE id = $1 AND lease_owner = $2 AND status = 'leased' FOR UPDATE",
      [lease.itemId, lease.owner],
    ));
  if (!held) throw leaseLost(lease);
}

const leaseLost = (lease: Lease) =>
  new LonghaulError(
    "LEASE_LOST",
    `Work item ${lease.itemId} is no longer leased to ${lease.owner}; its result is discarded.`,
  );

/**
 * Deletes a finished item. LEASE_LOST unless `lease` still holds it. One statement: the lease
 * check, the delete, and the NOTIFY when an item of the same concurrency key may have been
 * waiting for this one, so it can run without a transaction around it.
 */
export async function complete(c: Ctx, lease: Lease): Promise<void> {
  const done =
    /^\d{1,18}$/.test(lease.itemId) &&
    (await c.sql.get<{ concurrency_key: string | null }>(
      `WITH done AS (
         DELETE FROM work_items WHERE id = $1 AND lease_owner = $2 AND status = 'leased'
         RETURNING concurrency_key
       )
       SELECT concurrency_key, CASE WHEN concurrency_key IS NOT NULL THEN pg_notify($3, $4) END FROM done`,
      [lease.itemId, lease.owner, c.wake.channel, c.wake.payload],
    ));
  if (!done) throw leaseLost(lease);
  if (done.concurrency_key !== null) c.effects.work = true;
}

/** Deletes the item of a lease the caller has already asserted. */
export async function removeItem(c: Ctx, lease: Lease): Promise<void> {
  const r = await c.sql.get<{ concurrency_key: string | null }>(
    "DELETE FROM work_items WHERE id = $1 RETURNING concurrency_key",
    [lease.itemId],
  );
  // An item of the same key may have been waiting for this one to finish.
  if (r?.concurrency_key != null) c.effects.work = true;
}

export async function extendLease(c: Ctx, lease: Lease, leaseMs: number): Promise<void> {
  await assertLease(c, lease);
  await c.sql.run("UPDATE work_items SET lease_expires_at = $1 WHERE id = $2", [
    c.clock.now() + leaseMs,
    lease.itemId,
  ]);
}

/**
 * Returns an item to the queue, or deletes it when a pending twin already covers its dedupe
 * key. A twin inserted by another transaction after the check makes the UPDATE violate
 * `work_dedupe`; the runner then retries the operation, which finds the twin.
 */
async function requeue(
  c: Ctx,
  id: number | string,
  runAt: number,
  error: string | null,
  wake = true,
): Promise<void> {
  const twin = await c.sql.get<{ id: number }>(
    `UPDATE work_items twin SET run_at = LEAST(twin.run_at, $2)
       FROM work_items me
      WHERE me.id = $1 AND me.dedupe_key IS NOT NULL
        AND twin.dedupe_key = me.dedupe_key AND twin.status = 'pending'
      RETURNING twin.id`,
    [id, runAt],
  );
  if (twin) {
    await c.sql.run("DELETE FROM work_items WHERE id = $1", [id]);
  } else {
    await c.sql.run(
      `UPDATE work_items SET status = 'pending', run_at = $2, lease_owner = NULL, lease_expires_at = NULL,
         last_error = COALESCE($3, last_error), updated_at = $4 WHERE id = $1`,
      [id, runAt, error, c.clock.now()],
    );
  }
  if (wake) c.effects.work = true;
}

/**
 * Gives a leased item back without counting the attempt, marked parked: it waits for its
 * tenant's quota, and is woken early when a slot frees or the quotas change.
 */
export async function park(c: Ctx, lease: Lease, runAt: number): Promise<void> {
  await assertLease(c, lease);
  // Not a wake-up: it is not due before `runAt`, or before wakeParked says so.
  await requeue(c, lease.itemId, runAt, null, false);
  await c.sql.run(
    "UPDATE work_items SET parked = TRUE, attempts = GREATEST(0, attempts - 1) WHERE id = $1 AND status = 'pending'",
    [lease.itemId],
  );
}

export async function fail(c: Ctx, lease: Lease, error: string, retryAt: number): Promise<"retry" | "dead"> {
  await assertLease(c, lease);
  const row = (await c.sql.get<{ attempts: number; max_attempts: number }>(
    "SELECT attempts, max_attempts FROM work_items WHERE id = $1",
    [lease.itemId],
  ))!;
  if (row.attempts >= row.max_attempts) {
    await c.sql.run(
      `UPDATE work_items SET status = 'dead', lease_owner = NULL, lease_expires_at = NULL, last_error = $2,
         dedupe_key = NULL, updated_at = $3 WHERE id = $1`,
      [lease.itemId, error, c.clock.now()],
    );
    return "dead";
  }
  await requeue(c, lease.itemId, retryAt, error);
  return "retry";
}

/**
 * Returns expired leases to the queue, or to the dead letter after their last attempt.
 * Items whose holder is finishing them right now (row locked) are left for the next pass.
 */
export async function recoverExpiredLeases(c: Ctx): Promise<number> {
  const now = c.clock.now();
  const expired = await c.sql.all<{
    id: number;
    attempts: number;
    max_attempts: number;
    lease_owner: string;
  }>(
    `SELECT id, attempts, max_attempts, lease_owner FROM work_items
      WHERE status = 'leased' AND lease_expires_at <= $1
      ORDER BY id FOR UPDATE SKIP LOCKED`,
    [now],
  );
  const dead = expired.filter((e) => e.attempts >= e.max_attempts).map((e) => e.id);
  if (dead.length > 0) {
    await c.sql.run(
      `UPDATE work_items SET status = 'dead', last_error = 'lease of ' || lease_owner || ' expired',
         lease_owner = NULL, lease_expires_at = NULL, dedupe_key = NULL, updated_at = $2
       WHERE id = ANY($1::bigint[])`,
      [dead, now],
    );
  }
  // One at a time: two expired items may share a dedupe key, and the second must find the first as its twin.
  for (const e of expired) {
    if (e.attempts < e.max_attempts) await requeue(c, e.id, now, `lease of ${e.lease_owner} expired`);
  }
  return expired.length;
}

export async function nextRunAt(c: Ctx): Promise<number | null> {
  const r = await c.sql.get<{ t: number | null }>(
    "SELECT min(run_at) AS t FROM work_items WHERE status = 'pending'",
  );
  return r?.t ?? null;
}

export async function deadItems(c: Ctx, limit: number): Promise<WorkItem[]> {
  const rows = await c.sql.all<WorkRow>(
    "SELECT * FROM work_items WHERE status = 'dead' ORDER BY id DESC LIMIT $1",
    [limit],
  );
  return rows.map(toWorkItem);
}
