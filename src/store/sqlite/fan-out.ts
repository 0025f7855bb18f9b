import { matchesEvent } from "../../core/event-filter.ts";
import { filterOf } from "../rows.ts";
import { deliverItem } from "../work-items.ts";
import type { Ctx } from "./db.ts";
import { enqueue } from "./queue-ops.ts";

/**
 * In the transaction that appends task event `seq`: one delivery and one `deliver` item per
 * enabled endpoint of the tenant whose filter matches, so an event committed is an event
 * delivered (ARCHITECTURE §3.1). An event of a tenant without endpoints costs one indexed read.
 */
export function fanOut(c: Ctx, tenantId: string, taskId: string, seq: number, type: string): void {
  const endpoints = c.sql.all<{ id: string; events: string | null }>(
    "SELECT id, events FROM webhook_endpoints WHERE tenant_id = ? AND status = 'enabled'",
    tenantId,
  );
  if (endpoints.length === 0) return;
  const now = c.clock.now();
  for (const e of endpoints) {
    if (!matchesEvent(filterOf(e.events), type)) continue;
    const id = c.ids.next("dl");
    c.sql.run(
      `INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_seq, event_type, task_id, state,
         next_attempt_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
      id,
      tenantId,
      e.id,
      seq,
      type,
      taskId,
      now,
      now,
      now,
    );
    enqueue(c, [deliverItem(tenantId, id, now)]);
    c.wake = true;
  }
}
