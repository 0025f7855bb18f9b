import { fanOut } from "../ops/fan-out.ts";
import type { AppendedEvent } from "../sql/tx.ts";
import { advisoryLock, type Ctx } from "./db.ts";
import { txOf } from "./tx.ts";

/**
 * Appends the operation's events in one statement, just before COMMIT, NOTIFYs
 * `tenantId:seq` for each, and queues the outbound deliveries they owe.
 *
 * A sequence hands out numbers at insert time, not at commit, so two concurrent writers
 * could commit seq 11 before seq 10 and a reader resuming after 11 would never see 10. The
 * per-tenant lock, held from here to COMMIT, makes one tenant's events commit in sequence
 * order, which SSE resume and outbound delivery rely on (ARCHITECTURE §4.7). Taking it last keeps
 * the serialized part of a transaction to this insert and the commit.
 */
export async function appendTaskEvents(c: Ctx, channel: string): Promise<AppendedEvent[]> {
  const events = c.effects.events;
  if (events.length === 0) return [];
  // Sorted, so two transactions that touch the same tenants lock them in the same order.
  for (const tenantId of [...new Set(events.map((e) => e.tenantId))].sort()) {
    await advisoryLock(c, `task_events:${tenantId}`);
  }
  const rows = await c.sql.all<{ seq: number; tenant_id: string; task_id: string; type: string }>(
    `WITH appended AS (
       INSERT INTO task_events (tenant_id, task_id, type, data, created_at)
       SELECT e.tenant_id, e.task_id, e.type, e.data, e.created_at
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
                WITH ORDINALITY AS e (tenant_id, task_id, type, data, created_at, n)
        ORDER BY e.n
       RETURNING seq, tenant_id, task_id, type
     )
     SELECT seq, tenant_id, task_id, type, pg_notify($6, tenant_id || ':' || seq) FROM appended ORDER BY seq`,
    [
      events.map((e) => e.tenantId),
      events.map((e) => e.taskId),
      events.map((e) => e.type),
      events.map((e) => e.data),
      events.map((e) => e.createdAt),
      channel,
    ],
  );
  const appended = rows.map((r) => ({ tenantId: r.tenant_id, taskId: r.task_id, seq: r.seq, type: r.type }));
  await fanOut(txOf(c), appended);
  return appended;
}

/** The newest seq of each tenant's log that has one. */
export async function latestSeqs(c: Ctx, tenantIds: string[]): Promise<Map<string, number>> {
  const rows = await c.sql.all<{ tenant_id: string; s: number | null }>(
    `SELECT t.id AS tenant_id, (SELECT max(seq) FROM task_events e WHERE e.tenant_id = t.id) AS s
       FROM unnest($1::text[]) AS t (id)`,
    [tenantIds],
  );
  return new Map(rows.filter((r) => r.s !== null).map((r) => [r.tenant_id, r.s!]));
}
