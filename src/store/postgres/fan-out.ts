import { matchesEvent } from "../../core/event-filter.ts";
import { filterOf } from "../rows.ts";
import { deliverItem } from "../work-items.ts";
import type { Ctx } from "./db.ts";
import { enqueue } from "./queue-ops.ts";

/** A task event just appended, as fan-out needs it. */
export interface FannedEvent {
  tenantId: string;
  taskId: string;
  seq: number;
  type: string;
}

/**
 * In the transaction that appends the events: one delivery and one `deliver` item per
 * (event, enabled endpoint of its tenant whose filter matches), so an event committed is an
 * event delivered (ARCHITECTURE §3.1). Events of tenants without endpoints cost one indexed read.
 *
 * FOR SHARE on the endpoints: an endpoint being disabled or deleted right now is waited for
 * and then skipped, so no delivery is left pending for an endpoint that no longer takes them.
 */
export async function fanOut(c: Ctx, events: readonly FannedEvent[]): Promise<void> {
  if (events.length === 0) return;
  const endpoints = await c.sql.all<{ id: string; tenant_id: string; events: string | null }>(
    `SELECT id, tenant_id, events FROM webhook_endpoints
      WHERE tenant_id = ANY($1::text[]) AND status = 'enabled' ORDER BY id FOR SHARE`,
    [[...new Set(events.map((e) => e.tenantId))]],
  );
  if (endpoints.length === 0) return;
  const now = c.clock.now();
  const rows: { id: string; endpointId: string; event: FannedEvent }[] = [];
  for (const event of events) {
    for (const e of endpoints) {
      if (e.tenant_id !== event.tenantId || !matchesEvent(filterOf(e.events), event.type)) continue;
      rows.push({ id: c.ids.next("dl"), endpointId: e.id, event });
    }
  }
  if (rows.length === 0) return;
  await c.sql.run(
    `INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_seq, event_type, task_id, state,
       next_attempt_at, created_at, updated_at)
     SELECT d.id, d.tenant_id, d.endpoint_id, d.event_seq, d.event_type, d.task_id, 'pending', $7, $7, $7
       FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])
              AS d (id, tenant_id, endpoint_id, event_seq, event_type, task_id)`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.event.tenantId),
      rows.map((r) => r.endpointId),
      rows.map((r) => r.event.seq),
      rows.map((r) => r.event.type),
      rows.map((r) => r.event.taskId),
      now,
    ],
  );
  await enqueue(
    c,
    rows.map((r) => deliverItem(r.event.tenantId, r.id, now)),
  );
}
