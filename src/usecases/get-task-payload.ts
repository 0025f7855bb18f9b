import { LonghaulError } from "../core/errors.ts";
import type { TaskStore } from "../store/store.ts";

/** Which of a task's values: its input, its output, or a step's result. */
export type TaskValue = { kind: "input" } | { kind: "output" } | { kind: "step"; stepId: string };

/**
 * One of a tenant's task's values as its row holds it (a value, or a reference to the blob
 * store, ARCHITECTURE §4.10). Another tenant's task is TASK_NOT_FOUND; an output the task has
 * not produced (it has not succeeded), or a step without a result, is PAYLOAD_NOT_FOUND.
 */
export async function getTaskPayload(
  d: { tasks: TaskStore },
  g: { tenantId: string; taskId: string; value: TaskValue },
): Promise<unknown> {
  const detail = await d.tasks.getTask(g.tenantId, g.taskId);
  if (!detail) throw new LonghaulError("TASK_NOT_FOUND", `No task ${g.taskId} for this tenant.`);
  const { task } = detail;
  const v = g.value;
  if (v.kind === "input") return task.input;
  if (v.kind === "output") {
    if (task.status !== "succeeded") {
      throw new LonghaulError("PAYLOAD_NOT_FOUND", `Task ${task.id} has no output: it is ${task.status}.`);
    }
    return task.output;
  }
  const step = detail.steps.find((s) => s.stepId === v.stepId);
  if (step?.status !== "succeeded") {
    throw new LonghaulError(
      "PAYLOAD_NOT_FOUND",
      step
        ? `Step "${v.stepId}" of task ${task.id} has no result: it is ${step.status}.`
        : `Task ${task.id} has no step "${v.stepId}".`,
    );
  }
  return step.output;
}
