import type { ReminderType } from "../core/work-item.ts";
import type { Lease, WaitStore } from "../store/store.ts";

/**
 * A wait's deadline passed: the step times out if it is still waiting, by its timeout
 * policy (a durable timer, ARCHITECTURE §4.4). True when it timed out.
 */
export function fireTimeout(
  d: { store: WaitStore },
  a: { taskId: string; stepId: string; lease: Lease },
): Promise<boolean> {
  return d.store.fireTimeout(a.lease, a.taskId, a.stepId);
}

/**
 * An approval's reminder or escalation time came: the tenant is told (a task event) if it
 * still waits. True when it was told.
 */
export function fireReminder(
  d: { store: WaitStore },
  a: { taskId: string; stepId: string; type: ReminderType; lease: Lease },
): Promise<boolean> {
  return d.store.fireReminder(a.lease, a.taskId, a.stepId, a.type);
}
