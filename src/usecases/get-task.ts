import { LonghaulError } from "../core/errors.ts";
import type {
  ApprovalDecisionRow,
  NotificationRow,
  NotificationStore,
  TaskDetail,
  TaskStore,
  WaitStore,
} from "../store/store.ts";

/**
 * One of a tenant's tasks with its steps and jobs, the decisions recorded on each approval
 * step, and the messages each approval owes (when the store keeps them).
 */
export async function getTask(
  d: { tasks: TaskStore; waits: WaitStore; notifications?: Pick<NotificationStore, "notificationsOf"> },
  g: { tenantId: string; taskId: string },
): Promise<{
  detail: TaskDetail;
  decisions: Map<string, ApprovalDecisionRow[]>;
  notifications: Map<string, NotificationRow[]>;
}> {
  const detail = await d.tasks.getTask(g.tenantId, g.taskId);
  if (!detail) throw new LonghaulError("TASK_NOT_FOUND", `No task ${g.taskId} for this tenant.`);
  const decisions = new Map<string, ApprovalDecisionRow[]>();
  for (const s of detail.steps) {
    if (s.kind === "approval")
      decisions.set(s.stepId, await d.waits.approvalDecisions(detail.task.id, s.stepId));
  }
  const notifications = new Map<string, NotificationRow[]>();
  if (d.notifications && detail.steps.some((s) => s.kind === "approval")) {
    for (const n of await d.notifications.notificationsOf(detail.task.id)) {
      notifications.set(n.stepId, [...(notifications.get(n.stepId) ?? []), n]);
    }
  }
  return { detail, decisions, notifications };
}
