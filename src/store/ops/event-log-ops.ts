import { type TaskEventDbRow, toTaskEvent } from "../rows.ts";
import type { Tx } from "../sql/tx.ts";
import type { TaskEventRow } from "../store.ts";

/*
 * Reading each tenant's append-only log of task events. Appending them (and their fan-out)
 * is each dialect's `Tx` (ARCHITECTURE §4.1); announcing them, its notifier.
 */

/** The tenant's task events after `afterSeq`, of one task if given. No locks. */
export async function taskEvents(
  tx: Tx,
  tenantId: string,
  afterSeq: number,
  limit: number,
  taskId?: string,
): Promise<TaskEventRow[]> {
  const rows = taskId
    ? await tx.all<TaskEventDbRow>(
        "SELECT * FROM task_events WHERE tenant_id = ? AND task_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        [tenantId, taskId, afterSeq, limit],
      )
    : await tx.all<TaskEventDbRow>(
        "SELECT * FROM task_events WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        [tenantId, afterSeq, limit],
      );
  return rows.map(toTaskEvent);
}

/** The seq of the tenant's newest task event, 0 if none. */
export async function lastTaskEventSeq(tx: Tx, tenantId: string): Promise<number> {
  const r = await tx.get<{ s: number | null }>("SELECT MAX(seq) AS s FROM task_events WHERE tenant_id = ?", [
    tenantId,
  ]);
  return r?.s ?? 0;
}
