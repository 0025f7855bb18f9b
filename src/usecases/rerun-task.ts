import { LonghaulError } from "../core/errors.ts";
import { type RerunFrom, rerunFroms } from "../core/rerun.ts";
import type { TaskRow, TaskStore } from "../store/store.ts";
import type { TaskTypeLookup } from "./submit-task.ts";

export interface RerunTaskInput {
  tenantId: string;
  taskId: string;
  /** Absent: `failed_step`. */
  from?: string | undefined;
  clientRequestId?: string | null | undefined;
}

/** `from` as a re-run's start; VALIDATION_FAILED for another word. */
export function rerunFrom(from: string | undefined): RerunFrom {
  if (from === undefined) return "failed_step";
  if ((rerunFroms as readonly string[]).includes(from)) return from as RerunFrom;
  throw new LonghaulError("VALIDATION_FAILED", `"from" is ${rerunFroms.join(" or ")}, not "${from}".`, {
    param: "from",
  });
}

/**
 * Re-runs one of a tenant's tasks as a new task (ARCHITECTURE §4.4). TASK_NOT_FOUND for a task
 * of another tenant, TASK_NOT_RERUNNABLE for one that has not ended or that succeeded, and,
 * when `taskTypes` is given, TASK_TYPE_UNKNOWN for a type no longer registered: a re-run of it
 * could only fail. The input is not checked again: it is the one the old task ran with.
 */
export async function rerunTask(
  d: { tasks: TaskStore; taskTypes?: TaskTypeLookup },
  r: RerunTaskInput,
): Promise<{ task: TaskRow; created: boolean; reusedSteps: number }> {
  const from = rerunFrom(r.from);
  if (d.taskTypes) {
    const old = await d.tasks.getTask(r.tenantId, r.taskId);
    if (!old) throw new LonghaulError("TASK_NOT_FOUND", `No task ${r.taskId} for this tenant.`);
    d.taskTypes.get(old.task.type);
  }
  return d.tasks.rerunTask({
    tenantId: r.tenantId,
    taskId: r.taskId,
    from,
    clientRequestId: r.clientRequestId ?? null,
  });
}
