import { toWorkItem, type WorkRow } from "../rows.ts";
import type { WorkItem } from "../store.ts";
import type { Ctx } from "./db.ts";

/**
 * The claim, in one statement. $1 now, $2 limit, $3 owner, $4 lease length (ms), $5 the lane
 * the previous claim served last (NULL for the first).
 *
 * Fairness across tenants (ARCHITECTURE §4.2) is picked per tenant, so that one tenant's
 * backlog, however long, cannot crowd another out of the look-ahead:
 *
 * - `lanes`: every tenant with pending work (work without a tenant is the lane ''), found by
 *   skipping from one tenant to the next in the `work_lane` index: a seek per tenant, never a
 *   scan of the backlog. The entry a seek lands on is also the lane's head, its oldest
 *   pending item.
 * - `heads`: the lanes whose head is due, at most 4 × `limit` of them, so lanes whose due
 *   items all wait behind a busy concurrency key do not keep the next tenants out. The lanes
 *   take turns across claims: those after $5 come first, in lane order, then the rest from the
 *   start (`turn_order`), so even claims of one item serve every tenant in turn; the first
 *   claim takes the lanes with the oldest heads first.
 * - `due`: from each of those lanes, its first due items in due order that are not behind a
 *   concurrency key already leased, up to `per_lane`: enough to fill the slots twice over
 *   between the lanes, but never more than the slots, so a lane alone fills them without
 *   locking rows it cannot take (each row locked costs a write). `SKIP LOCKED` passes over
 *   the rows another claim is taking at this moment instead of waiting for it.
 * - `in_turns`: each lane's first item, then each lane's second, and so on, lanes in their
 *   `turn_order`; priority orders a lane's look-ahead.
 * - `one_per_key`: at most one item per concurrency key, the first in that order, so one
 *   claim never leases two items of one key (an item without a key is its own key).
 * - `chosen` / `leased`: the first `limit` of those, leased to $3.
 *
 * Finished items leave dead entries at the front of each lane in the index until VACUUM
 * removes them, and every seek from a lane's start walks over them. So a lane is walked once
 * per claim: `due` starts at the head `lanes` found (`(run_at, id) >=` it), not at the
 * lane's start again. The busy-key check is a probe per keyed candidate, on
 * `work_leased_key`; `OFFSET 0` keeps the planner from turning it into one pass over every
 * leased row (a hashed subplan or an anti-join), which a connection's cached generic plan,
 * made while the queue was nearly empty, would keep as dead leased rows pile up.
 *
 * Two claims that run at once can still pick different items of one key (neither sees the
 * other's lease before it commits). The unique index `work_leased_key` stops the second: its
 * UPDATE fails, and the transaction runner retries the claim, which then sees the key leased.
 *
 * The claim commits without waiting for its WAL to reach disk (`synchronous_commit` off for
 * its own transaction, set by the statement, since it runs without BEGIN): a claim lost to a
 * server crash only puts its items back to pending with the attempt uncounted, and nothing
 * done under such a lease can have lasted, because every later durable commit (a handler's
 * write, the completion) flushes the WAL up to and past the claim. It saves one WAL flush per
 * claim; the completion, which must not be lost, still waits for its own.
 */
export const CLAIM = `
WITH RECURSIVE lanes (lane, head, head_id) AS (
  (SELECT coalesce(tenant_id, ''), run_at, id FROM work_items
    WHERE status = 'pending' ORDER BY coalesce(tenant_id, ''), run_at, id LIMIT 1)
  UNION ALL
  SELECT nxt.lane, nxt.head, nxt.head_id
    FROM lanes
    CROSS JOIN LATERAL (
      SELECT coalesce(w.tenant_id, '') AS lane, w.run_at AS head, w.id AS head_id FROM work_items w
       WHERE w.status = 'pending' AND coalesce(w.tenant_id, '') > lanes.lane
       ORDER BY coalesce(w.tenant_id, ''), w.run_at, w.id LIMIT 1) nxt
),
ordered AS (
  SELECT lane, head, head_id,
         row_number() OVER (
           ORDER BY CASE WHEN $5::text IS NULL THEN head END,
                    CASE WHEN $5::text IS NULL THEN false ELSE lane <= $5::text COLLATE "C" END,
                    lane) AS turn_order
    FROM lanes WHERE head <= $1
),
heads AS (
  SELECT lane, head, head_id, turn_order FROM ordered ORDER BY turn_order LIMIT $2 * 4
),
per_lane AS (
  SELECT least($2, greatest(2, ceil(2.0 * $2 / greatest(1, count(*)))))::int AS n FROM heads
),
due AS (
  SELECT d.id, d.concurrency_key, d.priority, d.run_at, heads.lane, heads.turn_order
    FROM heads
    CROSS JOIN LATERAL (
      SELECT w.id, w.concurrency_key, w.priority, w.run_at FROM work_items w
       WHERE w.status = 'pending' AND coalesce(w.tenant_id, '') = heads.lane
         AND (w.run_at, w.id) >= (heads.head, heads.head_id) AND w.run_at <= $1
         AND (w.concurrency_key IS NULL OR NOT EXISTS (
               SELECT 1 FROM work_items held
                WHERE held.status = 'leased' AND held.concurrency_key = w.concurrency_key
               OFFSET 0))
       ORDER BY w.run_at, w.id
       LIMIT (SELECT n FROM per_lane)
         FOR UPDATE OF w SKIP LOCKED) d
),
in_turns AS (
  SELECT id, concurrency_key, turn_order,
         row_number() OVER (PARTITION BY lane ORDER BY priority DESC, run_at, id) AS turn
    FROM due
),
one_per_key AS (
  SELECT DISTINCT ON (coalesce(concurrency_key, id::text)) id, turn, turn_order
    FROM in_turns
   ORDER BY coalesce(concurrency_key, id::text), turn, turn_order
),
chosen AS (
  SELECT id, turn, turn_order FROM one_per_key ORDER BY turn, turn_order LIMIT $2
),
leased AS (
  UPDATE work_items w
     SET status = 'leased', lease_owner = $3, lease_expires_at = $1 + $4,
         attempts = w.attempts + 1, updated_at = $1
    FROM chosen
   WHERE w.id = chosen.id
  RETURNING w.*
)
SELECT leased.* FROM leased JOIN chosen USING (id)
 WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL
 ORDER BY chosen.turn, chosen.turn_order`;

/**
 * Leases up to `limit` due items to `owner` for `leaseMs`, never two of one concurrency key;
 * `after` is the lane the previous claim served last (the lane of its last item).
 */
export async function claim(
  c: Ctx,
  owner: string,
  limit: number,
  leaseMs: number,
  after: string | null,
): Promise<WorkItem[]> {
  if (limit <= 0) return [];
  const rows = await c.sql.all<WorkRow>(CLAIM, [c.clock.now(), limit, owner, leaseMs, after]);
  return rows.map(toWorkItem);
}
