import type { TaskRow, TaskStore } from "../store/store.ts";

/**
 * Cancels one of a tenant's tasks: its open waits end as canceled and its running jobs are asked
 * to stop. TASK_NOT_FOUND for a task of another tenant; TASK_NOT_CANCELABLE for one that has ended.
 */
export function cancelTask(
  d: { tasks: TaskStore },
  c: { tenantId: string; taskId: string },
): Promise<TaskRow> {
  return d.tasks.cancelTask(c.tenantId, c.taskId);
}
