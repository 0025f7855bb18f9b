import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";

/** An approval's reminder or escalation time came: tell the tenant (a task event) if it still waits. */
export async function reminder(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  const type = item.payload.type === "escalation" ? "escalation" : "reminder";
  await d.store.fireReminder(lease, String(item.payload.taskId), String(item.payload.stepId), type);
}
