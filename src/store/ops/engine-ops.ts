import type { StoredStep } from "../../core/replay.ts";
import { type JobDbRow, type StepDbRow, toJob, toStep } from "../rows.ts";
import type { Tx } from "../sql/tx.ts";
import type { JobRow, TaskRow } from "../store.ts";
import { taskRow } from "./task-ops.ts";

/*
 * The engine's store operations shared so far: the reads a task's advance and a job's work
 * start from. Advancing, creating and ending jobs and applying provider events stay per
 * dialect for now.
 */

/** A task with the steps it has stored, in order, for replay. No locks. */
export async function loadForAdvance(
  tx: Tx,
  taskId: string,
): Promise<{ task: TaskRow; history: StoredStep[] } | null> {
  const task = await taskRow(tx, taskId);
  if (!task) return null;
  const steps = await tx.all<StepDbRow>("SELECT * FROM steps WHERE task_id = ? ORDER BY position", [taskId]);
  return { task, history: steps.map(toStep) };
}

/** One job. No locks. */
export async function getJob(tx: Tx, jobId: string): Promise<JobRow | null> {
  const r = await tx.get<JobDbRow>("SELECT * FROM jobs WHERE id = ?", [jobId]);
  return r ? toJob(r) : null;
}
