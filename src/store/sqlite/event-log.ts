import type { AppendedEvent, PendingEvent } from "../sql/tx.ts";
import type { Sql } from "./db.ts";

/**
 * Appends an operation's task events at its end, in its savepoint. The one writer commits
 * them in sequence order; they are announced once the batch has committed.
 */
export function appendTaskEvents(sql: Sql, events: readonly PendingEvent[]): AppendedEvent[] {
  return events.map((e) => ({
    tenantId: e.tenantId,
    taskId: e.taskId,
    type: e.type,
    seq: Number(
      sql.run(
        "INSERT INTO task_events (tenant_id, task_id, type, data, created_at) VALUES (?, ?, ?, ?, ?)",
        e.tenantId,
        e.taskId,
        e.type,
        e.data,
        e.createdAt,
      ).lastInsertRowid,
    ),
  }));
}
