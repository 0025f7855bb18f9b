/**
 * Task states (ARCHITECTURE §7). A task cycles between `running` and `waiting` while it makes
 * progress; once terminal it never changes again (ARCHITECTURE §3.3).
 */
export const taskStatuses = [
  "pending",
  "running",
  "waiting",
  "succeeded",
  "failed",
  "canceled",
  "timed_out",
] as const;
export type TaskStatus = (typeof taskStatuses)[number];

const terminal = new Set<TaskStatus>(["succeeded", "failed", "canceled", "timed_out"]);

export function isTerminalTask(s: TaskStatus): boolean {
  return terminal.has(s);
}

export function isTaskStatus(s: string): s is TaskStatus {
  return (taskStatuses as readonly string[]).includes(s);
}
