import { type ErrorInfo, LonghaulError } from "./errors.ts";
import { atProviderJobStatuses, type JobStatus, jobMove, newJobStatus } from "./job.ts";
import { type StepStatus, stepGuard } from "./step.ts";

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

/**
 * What canceling a task does to what it holds (ARCHITECTURE §3.3), the same for every task:
 * its steps that have not ended are canceled; its jobs not yet created at their provider are
 * canceled outright (they never will be); those at their provider are asked to stop, one
 * `cancel_job` each, and end when the provider says so. Built from the tables, so a store
 * renders it into its statements once.
 */
export const cancelCascade: {
  readonly steps: { readonly from: readonly StepStatus[]; readonly to: "canceled" };
  readonly jobs: { readonly from: readonly JobStatus[]; readonly to: "canceled" };
  readonly stop: readonly JobStatus[];
} = {
  steps: { from: stepGuard(["canceled"]), to: "canceled" },
  // jobMove fails at load should the table stop letting a new job be canceled.
  jobs: { from: [newJobStatus], to: jobMove(newJobStatus, "canceled") },
  stop: atProviderJobStatuses,
};

/** A cancel's plan: nothing for a task canceled already, else the move and its cascade. */
export type CancelPlan =
  | { kind: "unchanged" }
  | { kind: "cancel"; to: "canceled"; cascade: typeof cancelCascade };

/**
 * Canceling `task`: unchanged when it is canceled already (a cancel repeated), the move to
 * `canceled` and its cascade when the table allows it, TASK_NOT_CANCELABLE once it has ended.
 */
export function cancelPlan(task: Pick<TaskRow, "id" | "status">): CancelPlan {
  if (task.status === "canceled") return { kind: "unchanged" };
  if (!canMoveTask(task.status, "canceled")) {
    throw new LonghaulError(
      "TASK_NOT_CANCELABLE",
      `Task ${task.id} has already ended (${task.status}); it cannot be canceled.`,
    );
  }
  return { kind: "cancel", to: "canceled", cascade: cancelCascade };
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
  /** The task this one re-runs (ARCHITECTURE §4.4); null (or absent) for a task submitted anew. */
  rerunOf?: string | null;
  createdAt: number;
  updatedAt: number;
}
