import type { ErrorInfo } from "./errors.ts";

/**
 * Step states. A step is `running` while `step.run` code is being attempted, `waiting` while
 * it is suspended on something outside (a job, a callback, a timer). Terminal states are
 * final (ARCHITECTURE §3.3): a step's outcome is stored once.
 */
export const stepStatuses = ["running", "waiting", "succeeded", "failed", "timed_out", "canceled"] as const;
export type StepStatus = (typeof stepStatuses)[number];

export const stepKinds = ["run", "job", "callback", "approval", "sleep", "wait_event"] as const;
export type StepKind = (typeof stepKinds)[number];

/**
 * The step's transition table. A `step.run` ends succeeded or failed (a retry keeps it
 * `running`); a wait ends succeeded, failed or timed out (ARCHITECTURE §4.4); canceling the
 * task cancels either. A state with no moves is terminal.
 */
export const stepMoves: Readonly<Record<StepStatus, readonly StepStatus[]>> = {
  running: ["succeeded", "failed", "canceled"],
  waiting: ["succeeded", "failed", "timed_out", "canceled"],
  succeeded: [],
  failed: [],
  timed_out: [],
  canceled: [],
};

/** Whether the table lets a step in state `from` move to `to`. Staying put is not a move. */
export function canMoveStep(from: StepStatus, to: StepStatus): boolean {
  return stepMoves[from].includes(to);
}

/**
 * The states a statement that writes any of `outcomes` may overwrite: those that have not
 * ended and from which the table allows every one of them (staying put counts: a retried
 * `step.run` stays `running`). The store renders it as the statement's guard, so a step in
 * another state, an ended one above all, is left as it is. Throws when no state qualifies:
 * such a statement would be a defect.
 */
export function stepGuard(outcomes: readonly StepStatus[]): StepStatus[] {
  const guard = stepStatuses.filter(
    (s) => stepMoves[s].length > 0 && outcomes.every((to) => s === to || canMoveStep(s, to)),
  );
  if (guard.length === 0) throw new Error(`No step state may move to each of ${outcomes.join(", ")}.`);
  return guard;
}

/** What storing a `step.run` attempt writes: its end, or `running` again for a retry. */
export const runOutcomes = ["running", "succeeded", "failed"] as const satisfies readonly StepStatus[];

/** How a wait ends (ARCHITECTURE §4.4): its answer, a failure, or its deadline. */
export const waitEnds = ["succeeded", "failed", "timed_out"] as const satisfies readonly StepStatus[];

/** A step as stored: the memo that replay reads. */
export interface StoredStep {
  stepId: string;
  position: number;
  kind: StepKind;
  status: StepStatus;
  output: unknown;
  error: ErrorInfo | null;
  attempts: number;
  deadlineAt: number | null;
  /** For a callback: its URL has been handed to `handoff` successfully. */
  handedOff: boolean;
}

/** A step as stored, with what its wait keeps besides the memo. */
export interface StepRow extends StoredStep {
  jobId: string | null;
  /** The wait's settings: callback verify source, approval config, signal match. */
  config: unknown;
  lateOutput: unknown;
  createdAt: number;
  updatedAt: number;
}
