import type { ErrorInfo } from "./errors.ts";

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

/**
 * The task's transition table: the states each state may move to (ARCHITECTURE §3.3). An
 * advance starts a `pending` or `waiting` task `running`, and its result ends it or leaves it
 * `waiting`; a task whose type no node knows fails without running; any task that has not
 * ended may be canceled. A state with no moves is terminal.
 */
export const taskMoves: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  pending: ["running", "failed", "canceled"],
  running: ["waiting", "succeeded", "failed", "timed_out", "canceled"],
  waiting: ["running", "failed", "canceled"],
  succeeded: [],
  failed: [],
  canceled: [],
  timed_out: [],
};

/** Whether the table lets a task in state `from` move to `to`. Staying put is not a move. */
export function canMoveTask(from: TaskStatus, to: TaskStatus): boolean {
  return taskMoves[from].includes(to);
}

/** A terminal task never moves again: the table gives it no moves. */
export function isTerminalTask(s: TaskStatus): boolean {
  return taskMoves[s].length === 0;
}

export function isTaskStatus(s: string): s is TaskStatus {
  return (taskStatuses as readonly string[]).includes(s);
}

/** A task as stored. */
export interface TaskRow {
  id: string;
  tenantId: string;
  type: string;
  status: TaskStatus;
  input: unknown;
  output: unknown;
  error: ErrorInfo | null;
  clientRequestId: string | null;
  userId: string | null;
  traceId: string | null;
  createdAt: number;
  updatedAt: number;
}
