import { LonghaulError } from "./errors.ts";
import type { StoredStep } from "./step.ts";
import type { TaskRow, TaskStatus } from "./task.ts";

/**
 * Where a re-run starts (ARCHITECTURE §4.4): `failed_step` reuses the succeeded steps before
 * the first one that did not succeed, so replay runs only from there; `start` reuses nothing.
 */
export const rerunFroms = ["failed_step", "start"] as const;
export type RerunFrom = (typeof rerunFroms)[number];

/** The ends a task may be re-run from: those that did not succeed. */
export const rerunnableStatuses = [
  "failed",
  "canceled",
  "timed_out",
] as const satisfies readonly TaskStatus[];

export function isRerunnable(s: TaskStatus): boolean {
  return (rerunnableStatuses as readonly TaskStatus[]).includes(s);
}

/** TASK_NOT_RERUNNABLE unless `task` ended without succeeding. */
export function checkRerunnable(task: Pick<TaskRow, "id" | "status">): void {
  if (!isRerunnable(task.status)) {
    throw new LonghaulError(
      "TASK_NOT_RERUNNABLE",
      `Task ${task.id} is ${task.status}; only a failed, canceled or timed-out task can be re-run.`,
    );
  }
}

/**
 * The steps a re-run copies: from `failed_step`, the old task's steps in position order up
 * to (not including) the first that did not succeed, or that leaves a gap in the positions;
 * from `start`, none. Only succeeded steps are copied: their outcome is final, so replay
 * returns it without running the code or dispatching the job again. A waiting, failed,
 * timed-out or canceled step is the point the re-run runs from.
 */
export function reusedSteps(steps: readonly StoredStep[], from: RerunFrom): StoredStep[] {
  if (from === "start") return [];
  const ordered = [...steps].sort((a, b) => a.position - b.position);
  const reused: StoredStep[] = [];
  for (const s of ordered) {
    if (s.status !== "succeeded" || s.position !== reused.length) break;
    reused.push(s);
  }
  return reused;
}
