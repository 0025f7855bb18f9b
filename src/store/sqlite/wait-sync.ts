import { isTerminalTask } from "../../core/task-state.ts";
import { endEvent, endParams, waitSql } from "../ops/wait-ops.ts";
import type { TaskRow } from "../store.ts";
import { advanceItem, timerKeys } from "../work-items.ts";
import type { Ctx } from "./db.ts";
import { emit } from "./event-log.ts";
import { enqueue } from "./queue-ops.ts";

/**
 * The synchronous form of the shared `endWait` (ops/wait-ops.ts), for the SQLite engine
 * operations that are not yet written against a Tx. It runs the same SQL texts; it goes once
 * those operations are shared.
 */
export function endWait(
  c: Ctx,
  task: TaskRow,
  stepId: string,
  status: "succeeded" | "failed" | "timed_out",
  fields: Parameters<typeof endEvent>[1],
): boolean {
  const changed = c.sql.run(
    waitSql.end,
    ...endParams(c.clock.now(), task.id, stepId, status, fields),
  ).changes;
  if (changed === 0) return false;
  c.sql.run(waitSql.dropSubscription, task.id, stepId);
  const keys = timerKeys(task.id, stepId);
  c.sql.run(waitSql.dropTimers(keys.length), ...keys);
  emit(c, task.tenantId, task.id, `step.${status}`, endEvent(stepId, fields));
  if (!isTerminalTask(task.status)) enqueue(c, [advanceItem(task.tenantId, task.id)]);
  return true;
}
