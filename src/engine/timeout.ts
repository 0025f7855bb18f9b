import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";

/** A wait's deadline passed: time the step out if it is still waiting (a durable timer). */
export async function timeout(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  await d.store.fireTimeout(lease, String(item.payload.taskId), String(item.payload.stepId));
}
