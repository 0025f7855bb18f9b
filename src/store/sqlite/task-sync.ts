import type { ErrorInfo } from "../../core/errors.ts";
import type { TaskStatus } from "../../core/task-state.ts";
import { statusEvent, statusParams, taskSql } from "../ops/task-ops.ts";
import { type TaskDbRow, toTask } from "../rows.ts";
import type { TaskRow } from "../store.ts";
import type { Ctx } from "./db.ts";
import { emit } from "./event-log.ts";

/*
 * Synchronous forms of the shared task operations (ops/task-ops.ts), for the SQLite
 * operations that are not yet written against a Tx (engine). They run the same SQL
 * texts; they go once those operations are shared.
 */

export function taskRow(c: Ctx, taskId: string): TaskRow | null {
  const r = c.sql.get<TaskDbRow>(taskSql.byId, taskId);
  return r ? toTask(r) : null;
}

export function setTaskStatus(
  c: Ctx,
  task: TaskRow,
  status: TaskStatus,
  fields: { output?: unknown; error?: ErrorInfo | null } = {},
): void {
  c.sql.run(taskSql.setStatus, ...statusParams(c.clock.now(), task.id, status, fields));
  if (task.status !== status) emit(c, task.tenantId, task.id, `task.${status}`, statusEvent(status, fields));
}
