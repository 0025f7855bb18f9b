import type { TaskStatus } from "../../src/client/index.ts";

/** Every task status, in the order the list's filter offers them. */
export const taskStatuses: TaskStatus[] = [
  "pending",
  "running",
  "waiting",
  "succeeded",
  "failed",
  "canceled",
  "timed_out",
];

/** The statuses a task never leaves. */
export const terminal = new Set<TaskStatus>(["succeeded", "failed", "canceled", "timed_out"]);

/** The ends a task may be re-run from: a new task, the same input (ARCHITECTURE §4.4). */
export const rerunnable = new Set<TaskStatus>(["failed", "canceled", "timed_out"]);
