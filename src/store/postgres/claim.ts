import { toWorkItem, type WorkRow } from "../rows.ts";
import type { WorkItem } from "../store.ts";
import type { Ctx } from "./db.ts";

/**
 * The claim, in one statement. $1 now, $2 limit, $3 owner, $4 lease length (ms).
 *
 * - `due`: the head of the queue in claim order (priority, then run_at, then id): pending,
 *   due, and not behind a concurrency key that is already leased. `SKIP LOCKED` passes over
 *   the rows another claim is taking at this moment instead of waiting for it. It looks past
 *   `limit`, because the steps below may set some aside.
 * - `in_turns`: fairness across tenants (ARCHITECTURE §4.2): each tenant's first item, then each
 *   tenant's second, and so on, tenants in the order of their first item; one tenant's burst
 *   does not fill every slot ahead of another tenant's work.
 * - `one_per_key`: at most one item per concurrency key, the first in that order, so one
 *   claim never leases two items of one key (an item without a key is its own key).
 * - `chosen` / `leased`: the first `limit` of those, leased to $3.
 *
 * Two claims that run at once can still pick different items of one key (neither sees the
 * other's lease before it commits). The unique index `work_leased_key` stops the second: its
 * UPDATE fails, and the transaction runner retries the claim, which then sees the key leased.
 */
const CLAIM = `
WITH due AS (
  SELECT w.id, w.tenant_id, w.concurrency_key, w.priority, w.run_at
    FROM work_items w
   WHERE w.status = 'pending'
     AND w.run_at <= $1
     AND NOT EXISTS (
           SELECT 1 FROM work_items held
            WHERE held.status = 'leased' AND held.concurrency_key = w.concurrency_key)
   ORDER BY w.priority DESC, w.run_at, w.id
   LIMIT $2 * 8
     FOR UPDATE OF w SKIP LOCKED
),
in_order AS (
  SELECT id, tenant_id, concurrency_key, row_number() OVER (ORDER BY priority DESC, run_at, id) AS pos
    FROM due
),
in_turns AS (
  SELECT id, concurrency_key,
         row_number() OVER (PARTITION BY tenant_id ORDER BY pos) AS turn,
         min(pos) OVER (PARTITION BY tenant_id) AS lane
    FROM in_order
),
one_per_key AS (
  SELECT DISTINCT ON (coalesce(concurrency_key, id::text)) id, turn, lane
    FROM in_turns
   ORDER BY coalesce(concurrency_key, id::text), turn, lane
),
chosen AS (
  SELECT id, turn, lane FROM one_per_key ORDER BY turn, lane LIMIT $2
),
leased AS (
  UPDATE work_items w
     SET status = 'leased', lease_owner = $3, lease_expires_at = $1 + $4,
         attempts = w.attempts + 1, updated_at = $1
    FROM chosen
   WHERE w.id = chosen.id
  RETURNING w.*
)
SELECT leased.* FROM leased JOIN chosen USING (id) ORDER BY chosen.turn, chosen.lane`;

/** Leases up to `limit` due items to `owner` for `leaseMs`, never two of one concurrency key. */
export async function claim(c: Ctx, owner: string, limit: number, leaseMs: number): Promise<WorkItem[]> {
  if (limit <= 0) return [];
  const rows = await c.sql.all<WorkRow>(CLAIM, [c.clock.now(), limit, owner, leaseMs]);
  return rows.map(toWorkItem);
}
