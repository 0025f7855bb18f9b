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
