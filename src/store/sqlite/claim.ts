import { defaultMaxAttempts, type WorkKind } from "../../core/work-item.ts";
import { json, parseJson } from "../json.ts";
import { leaseLost } from "../ops/queue-ops.ts";
import type { Tx } from "../sql/tx.ts";
import type { Lease, NewWorkItem, WorkItem } from "../store.ts";
import type { Sql } from "./db.ts";

/*
 * What SQLite's queue does its own way: inserting items, claiming them, and completing many
 * at once. The one writer takes items with plain reads and updates where PostgreSQL needs
 * SKIP LOCKED; the rest of the queue is shared (ops/queue-ops.ts).
 */

/** A work item id as SQLite holds it; anything else cannot be leased (as `assertLease`). */
const ITEM_ID = /^\d{1,15}$/;

/**
 * `complete` for many leases in one operation: one DELETE per lease holder (a process's
 * worker is one) checks the leases and deletes their items. Answers, lease by lease, whether
 * it still held its item; a lease given twice completes its item once and the second finds it
 * gone, as one call after the other would. Wakes the workers when an item of a concurrency
 * key may have been waiting for one of these.
 */
export async function completeMany(tx: Tx, leases: readonly Lease[]): Promise<boolean[]> {
  const byOwner = new Map<string, number[]>();
  for (const l of leases) {
    if (!ITEM_ID.test(l.itemId)) continue;
    const ids = byOwner.get(l.owner);
    if (ids) ids.push(Number(l.itemId));
    else byOwner.set(l.owner, [Number(l.itemId)]);
  }
  const deleted = new Set<string>();
  for (const [owner, ids] of byOwner) {
    const rows = await tx.all<{ id: number; concurrency_key: string | null }>(
      `DELETE FROM work_items
        WHERE id IN (SELECT value FROM json_each(?)) AND lease_owner = ? AND status = 'leased'
        RETURNING id, concurrency_key`,
      [JSON.stringify(ids), owner],
    );
    for (const r of rows) {
      deleted.add(`${r.id}:${owner}`);
      if (r.concurrency_key !== null) tx.wake();
    }
  }
  // `delete` answers true once per item: a repeated lease finds it gone.
  return leases.map((l) => ITEM_ID.test(l.itemId) && deleted.delete(`${Number(l.itemId)}:${l.owner}`));
}

/**
 * `complete` calls folded into one `completeMany`: calls made one after another, with no other
 * write queued between them, share the last one queued, whose list of leases grows until it
 * runs. `last` names the write queued last; `send` queues a `completeMany` of the list it is
 * given. Each caller still gets its own answer, LEASE_LOST for a lease that no longer held its
 * item, and the order of writes is kept.
 */
export class CompleteFold {
  private open: { leases: Lease[]; held: Promise<boolean[]>; mark: unknown } | null = null;

  constructor(
    private readonly last: () => unknown,
    private readonly send: (leases: Lease[]) => Promise<boolean[]>,
  ) {}

  complete(lease: Lease): Promise<void> {
    let fold = this.open;
    if (!fold || this.last() !== fold.mark) {
      const leases: Lease[] = [];
      const held = this.send(leases);
      fold = this.open = { leases, held, mark: this.last() };
    }
    const i = fold.leases.push(lease) - 1;
    return fold.held.then((held) => {
      if (!held[i]) throw leaseLost(lease);
    });
  }
}

/**
 * Inserts work items. A dedupe key already held by a pending item keeps one item, due at
 * the earlier of the two times (so a resume never waits behind a retry's backoff).
 */
export function enqueue(sql: Sql, now: number, items: readonly NewWorkItem[]): void {
  for (const it of items) {
    sql.run(
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

/**
 * Leases up to `limit` due items to `owner`, tenants in turn (ARCHITECTURE §4.2). `after` is
 * the lane the previous claim served last (`laneOf` its last item): lanes after it come first.
 */
export function claim(
  sql: Sql,
  now: number,
  owner: string,
  limit: number,
  leaseMs: number,
  after: string | null,
): WorkItem[] {
  if (limit <= 0) return [];
  const candidates = roundRobin(dueByLane(sql, now, limit, after));
  const chosen: number[] = [];
  const keys = new Set<string>();
  for (const cand of candidates) {
    if (chosen.length >= limit) break;
    const key = cand.concurrency_key;
    if (key !== null) {
      // An expired lease still blocks its key until recoverExpiredLeases hands it back, so a
      // stalled holder is fenced off before anyone else may start (ARCHITECTURE §3.4).
      if (keys.has(key)) continue;
      const busy = sql.get("SELECT 1 FROM work_items WHERE concurrency_key = ? AND status = 'leased'", key);
      if (busy) continue;
      keys.add(key);
    }
    chosen.push(cand.id);
  }
  if (chosen.length === 0) return [];
  // One statement leases them all; the answer keeps the fair order chosen above. It returns
  // only the columns the lease leaves unknown, as arrays (`Sql.raw`): per row, an object of
  // every column cost more than the update.
  const expires = now + leaseMs;
  const rows = sql.raw<LeasedRow>(
    `UPDATE work_items SET status = 'leased', lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1,
       updated_at = ? WHERE id IN (SELECT value FROM json_each(?))
     RETURNING id, kind, tenant_id, payload, run_at, attempts, max_attempts, last_error`,
    owner,
    expires,
    now,
    JSON.stringify(chosen),
  );
  const byId = new Map(rows.map((r) => [r[0], r]));
  const out: WorkItem[] = [];
  for (const id of chosen) {
    const r = byId.get(id);
    if (!r) continue;
    out.push({
      id: String(id),
      kind: r[1],
      tenantId: r[2],
      payload: parseJson(r[3]),
      runAt: r[4],
      attempts: r[5],
      maxAttempts: r[6],
      status: "leased",
      leaseOwner: owner,
      leaseExpiresAt: expires,
      lastError: r[7],
    });
  }
  return out;
}

/** What the claim's UPDATE returns of a leased item, in its RETURNING order. */
type LeasedRow = [
  id: number,
  kind: WorkKind,
  tenantId: string | null,
  payload: string,
  runAt: number,
  attempts: number,
  maxAttempts: number,
  lastError: string | null,
];

interface Candidate {
  id: number;
  tenant_id: string | null;
  concurrency_key: string | null;
  priority: number;
}

/**
 * Fairness across tenants (ARCHITECTURE §4.2), picked per tenant so that one tenant's backlog,
 * however long, cannot crowd another out of the look-ahead. Each tenant with pending work is
 * a lane (work without a tenant is the lane ''); the lanes are found by skipping from one
 * tenant to the next in the `work_lane` index, and each lane's oldest item by one seek, so a
 * claim reads a few rows per tenant, never the backlog. The lanes whose oldest item is due
 * (at most `lanesPerClaim(limit)` of them) then give up to `perLane` of their due items each,
 * in due order; `roundRobin` interleaves them. The lanes take turns across claims: those after
 * `after` (the lane the previous claim served last) come first, in lane order, then the rest
 * from the start, so even claims of one item serve every tenant in turn. Without a previous
 * claim, the lanes with the oldest heads come first.
 */
function dueByLane(sql: Sql, now: number, limit: number, after: string | null): Candidate[] {
  const lanes = sql.all<{ lane: string; head: number }>(
    `WITH RECURSIVE lanes (lane) AS (
       SELECT (SELECT coalesce(tenant_id, '') FROM work_items INDEXED BY work_lane
                WHERE status = 'pending' ORDER BY coalesce(tenant_id, '') LIMIT 1)
       UNION ALL
       SELECT (SELECT coalesce(tenant_id, '') FROM work_items INDEXED BY work_lane
                WHERE status = 'pending' AND coalesce(tenant_id, '') > lanes.lane
                ORDER BY coalesce(tenant_id, '') LIMIT 1)
         FROM lanes WHERE lanes.lane IS NOT NULL
     )
     SELECT lane, (SELECT run_at FROM work_items INDEXED BY work_lane
                    WHERE status = 'pending' AND coalesce(tenant_id, '') = lanes.lane
                    ORDER BY run_at LIMIT 1) AS head
       FROM lanes WHERE lane IS NOT NULL`,
  );
  const due = lanes
    .filter((l) => l.head <= now)
    .sort(
      after === null
        ? (a, b) => a.head - b.head || (a.lane < b.lane ? -1 : 1)
        : (a, b) => Number(a.lane <= after) - Number(b.lane <= after) || (a.lane < b.lane ? -1 : 1),
    )
    .slice(0, lanesPerClaim(limit));
  const take = perLane(limit, due.length);
  const out: Candidate[] = [];
  for (const l of due) {
    // As arrays (`Sql.raw`), made into candidates here: cheaper than an object per row.
    const items = sql
      .raw<[id: number, tenantId: string | null, concurrencyKey: string | null, priority: number]>(
        `SELECT id, tenant_id, concurrency_key, priority FROM work_items INDEXED BY work_lane
          WHERE status = 'pending' AND coalesce(tenant_id, '') = ? AND run_at <= ?
          ORDER BY run_at, id LIMIT ?`,
        l.lane,
        now,
        take,
      )
      .map(
        ([id, tenant_id, concurrency_key, priority]): Candidate => ({
          id,
          tenant_id,
          concurrency_key,
          priority,
        }),
      );
    // Priority orders a lane's look-ahead; items of equal priority keep their due order.
    out.push(...items.sort((a, b) => b.priority - a.priority));
  }
  return out;
}

/**
 * Lanes one claim looks at: more than its slots, so lanes whose due items all wait behind a
 * busy concurrency key do not keep the next tenants out.
 */
export const lanesPerClaim = (limit: number): number => limit * 4;

/**
 * Items one claim reads from each lane: enough to fill its slots twice over between the
 * lanes (a lane alone may take them all), so a few items held back by their concurrency key
 * do not leave slots empty, while the rows read stay near `2 × limit`.
 */
export const perLane = (limit: number, lanes: number): number =>
  Math.max(2, Math.ceil((2 * limit) / Math.max(1, lanes)));

/**
 * Interleaves candidates one per tenant in turn, tenants in the order given: every tenant's
 * first item, then every tenant's second, and so on, so a burst of one tenant does not fill
 * every worker slot ahead of another tenant's work.
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
