import { backoffMs } from "../core/backoff.ts";
import type { Lease } from "../store/store.ts";
import type { JobWorkDeps } from "./job-deps.ts";

/**
 * Asks the provider to stop a job whose task was canceled or whose wait timed out. Best
 * effort: a job never created, or a provider without `cancel`, completes the item; a failed
 * call retries with backoff until the item's attempts run out.
 */
export async function cancelProviderJob(
  d: JobWorkDeps,
  a: { jobId: string; lease: Lease; attempts: number },
): Promise<
  { kind: "skipped" | "canceled" } | { kind: "retrying"; message: string; provider: string; dead: boolean }
> {
  const job = await d.store.getJob(a.jobId);
  const provider = job ? d.providers.find(job.provider) : undefined;
  if (!job?.externalId || !provider?.cancel) {
    await d.store.complete(a.lease);
    return { kind: "skipped" };
  }
  try {
    await provider.cancel(job.externalId);
    await d.store.complete(a.lease);
    return { kind: "canceled" };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const after = await d.store.fail(a.lease, message, d.clock.now() + backoffMs(a.attempts));
    return { kind: "retrying", message, provider: job.provider, dead: after === "dead" };
  }
}
