import type { TaskStatus } from "../../core/task.ts";
import { endedTaskStatuses, type StatsRows } from "../../core/task-stats.ts";
import { inStates } from "../sql/states.ts";
import type { Tx } from "../sql/tx.ts";

/*
 * Task throughput and latency reads, written once for both dialects. Each statement is one
 * index range scan, newest first and capped, so a request costs at most `maxRows` rows per
 * list however many tasks the tenant has.
 */

export const statsSql = {
  // tasks_by_tenant_created (tenant_id, created_at)
  submitted: `SELECT created_at FROM tasks
    WHERE tenant_id = ? AND created_at >= ? AND created_at < ?
    ORDER BY created_at DESC LIMIT ?`,
  // tasks_by_tenant_ended (tenant_id, updated_at) WHERE status is terminal: the condition is
  // the index's own, word for word, so both planners use it.
  ended: `SELECT status, created_at, updated_at FROM tasks
    WHERE tenant_id = ? AND ${inStates("status", endedTaskStatuses)} AND updated_at >= ? AND updated_at < ?
    ORDER BY updated_at DESC LIMIT ?`,
};

/** The tasks submitted in `[from, to)` and those that ended in it, newest first, each list at most `maxRows`. No locks. */
export async function taskStatsRows(
  tx: Tx,
  tenantId: string,
  from: number,
  to: number,
  maxRows: number,
): Promise<StatsRows> {
  const submitted = await tx.all<{ created_at: number }>(statsSql.submitted, [tenantId, from, to, maxRows]);
  const ended = await tx.all<{ status: TaskStatus; created_at: number; updated_at: number }>(statsSql.ended, [
    tenantId,
    from,
    to,
    maxRows,
  ]);
  return {
    submitted: submitted.map((r) => Number(r.created_at)),
    ended: ended.map((r) => ({
      status: r.status,
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
    })),
  };
}
