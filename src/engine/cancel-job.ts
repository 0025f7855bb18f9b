import { backoffMs } from "../core/backoff.ts";
import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";

/** Asks the provider to stop a job whose task was canceled or whose wait timed out. Best effort. */
export async function cancelJob(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  const job = await d.store.getJob(String(item.payload.jobId));
  const provider = job ? d.providers.find(job.provider) : undefined;
  if (!job?.externalId || !provider?.cancel) return d.store.complete(lease);
  try {
    await provider.cancel(job.externalId);
    await d.store.complete(lease);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    await d.store.fail(lease, message, d.clock.now() + backoffMs(item.attempts));
  }
}
