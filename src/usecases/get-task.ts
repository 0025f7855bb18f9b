import { LonghaulError } from "../core/errors.ts";
import type { ApprovalDecisionRow, TaskDetail, TaskStore, WaitStore } from "../store/store.ts";

/** One of a tenant's tasks with its steps and jobs, and the decisions recorded on each approval step. */
export async function getTask(
  d: { tasks: TaskStore; waits: WaitStore },
  g: { tenantId: string; taskId: string },
): Promise<{ detail: TaskDetail; decisions: Map<string, ApprovalDecisionRow[]> }> {
  const detail = await d.tasks.getTask(g.tenantId, g.taskId);
  if (!detail) throw new LonghaulError("TASK_NOT_FOUND", `No task ${g.taskId} for this tenant.`);
  const decisions = new Map<string, ApprovalDecisionRow[]>();
  for (const s of detail.steps) {
    if (s.kind === "approval")
      decisions.set(s.stepId, await d.waits.approvalDecisions(detail.task.id, s.stepId));
  }
  return { detail, decisions };
}
