import { defaultMaxAttempts } from "../../core/work-item.ts";
import { json } from "../json.ts";
import type { NewWorkItem, WorkKind } from "../store.ts";
import type { Ctx } from "./db.ts";

/*
 * What PostgreSQL's queue does its own way (the claim is in claim.ts, completing a batch of
 * leases in one statement in complete-batch.ts): inserting a batch of items in one statement.
 * The rest of the queue is shared (ops/queue-ops.ts).
 */

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
