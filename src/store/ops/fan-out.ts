import { matchesEvent } from "../../core/event-filter.ts";
import { deliverItem } from "../../core/work-item.ts";
import { filterOf } from "../rows.ts";
import type { AppendedEvent, Tx } from "../sql/tx.ts";

/** Rows one multi-row INSERT carries at most, so the statement texts to prepare stay few. */
const ROWS_PER_INSERT = 64;

/**
 * In the transaction that appends the events: one delivery and one `deliver` item per
 * (event, enabled endpoint of its tenant whose filter matches), so an event committed is an
 * event delivered (ARCHITECTURE §3.1). Events of tenants without endpoints cost one indexed read.
 *
 * Locks: the endpoints, shared (PostgreSQL): an endpoint being disabled or deleted right now
 * is waited for and then skipped, so no delivery is left pending for an endpoint that no
 * longer takes them. Enqueues one `deliver` item per delivery.
 */
export async function fanOut(tx: Tx, events: readonly AppendedEvent[]): Promise<void> {
  if (events.length === 0) return;
  const tenants = [...new Set(events.map((e) => e.tenantId))];
  const endpoints = await tx.all<{ id: string; tenant_id: string; events: string | null }>(
    `SELECT id, tenant_id, events FROM webhook_endpoints
      WHERE tenant_id IN (${tenants.map(() => "?").join(", ")}) AND status = 'enabled'
      ORDER BY id${tx.d.forShare}`,
    tenants,
  );
  if (endpoints.length === 0) return;
  const now = tx.clock.now();
  const rows: unknown[][] = [];
  for (const event of events) {
    for (const e of endpoints) {
      if (e.tenant_id !== event.tenantId || !matchesEvent(filterOf(e.events), event.type)) continue;
      rows.push([
        tx.ids.next("dl"),
        event.tenantId,
        e.id,
        event.seq,
        event.type,
        event.taskId,
        now,
        now,
        now,
      ]);
    }
  }
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const chunk = rows.slice(i, i + ROWS_PER_INSERT);
    await tx.run(
      `INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_seq, event_type, task_id,
         next_attempt_at, created_at, updated_at, state)
       VALUES ${chunk.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')").join(", ")}`,
      chunk.flat(),
    );
  }
  await tx.enqueue(rows.map((r) => deliverItem(r[1] as string, r[0] as string, now)));
}
