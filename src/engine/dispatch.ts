import { backoffMs } from "../core/backoff.ts";
import { isTerminalJob } from "../core/job.ts";
import { ProviderError } from "../providers/provider.ts";
import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";

/**
 * Creates a job at its provider. The idempotency key `task:step` goes with every attempt,
 * so a retry after a timeout or a crash between the provider's answer and our commit
 * returns the same job instead of a second paid one (ARCHITECTURE §3.7).
 */
export async function dispatch(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  const jobId = String(item.payload.jobId);
  const job = await d.store.getJob(jobId);
  if (!job || job.externalId !== null || isTerminalJob(job.status)) return d.store.complete(lease);
  const provider = d.providers.find(job.provider);
  if (!provider) {
    return d.store.failJob(lease, jobId, {
      code: "PROVIDER_UNKNOWN",
      message: `No provider "${job.provider}" is configured on this node.`,
    });
  }
  const admitted = await d.store.acquireJobSlot(lease, jobId);
  if (admitted === "parked") return;
  if (admitted === "rejected") {
    return d.store.failJob(lease, jobId, {
      code: "BUDGET_EXCEEDED",
      message:
        "The tenant has spent its token budget for this period (policy reject); it resets at the start of the next period, or ask an admin to raise token_budget.",
    });
  }
  try {
    const created = await provider.create({
      input: job.input,
      idempotencyKey: job.idempotencyKey,
      webhookUrl: d.webhookUrlFor(job.provider),
      tenantId: job.tenantId,
      taskId: job.taskId,
      stepId: job.stepId,
    });
    await d.store.recordJobCreated(lease, jobId, created.jobId, created.status);
  } catch (err) {
    const retriable = !(err instanceof ProviderError) || err.retriable;
    const message = err instanceof Error ? err.message : String(err);
    if (!retriable || item.attempts >= item.maxAttempts) {
      return d.store.failJob(lease, jobId, {
        code: "PROVIDER_ERROR",
        message: `${job.provider} refused to create the job after ${item.attempts} attempt(s): ${message}`,
      });
    }
    d.log.warn({ jobId, attempt: item.attempts, err: message }, "dispatch failed; will retry");
    await d.store.fail(
      lease,
      message,
      d.clock.now() + backoffMs(item.attempts, { baseMs: 500, maxMs: 60_000 }),
    );
  }
}
