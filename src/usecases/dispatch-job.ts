import { backoffMs, throttleDelayMs } from "../core/backoff.ts";
import { LonghaulError, toErrorInfo } from "../core/errors.ts";
import { isTerminalJob } from "../core/job.ts";
import { type Provider, ProviderError } from "../providers/provider.ts";
import type { Lease, ProviderBudget } from "../store/store.ts";
import type { JobWorkDeps } from "./job-deps.ts";

export type DispatchJobResult =
  | { kind: "skipped" }
  | { kind: "parked" }
  | { kind: "created"; externalId: string }
  | { kind: "failed"; code: "PROVIDER_UNKNOWN" | "BUDGET_EXCEEDED" | "PROVIDER_ERROR"; provider: string }
  | { kind: "retrying"; jobId: string; attempt: number; message: string; provider: string }
  | { kind: "throttled"; jobId: string; retryAt: number; message: string; provider: string };

/**
 * Creates a job at its provider. The idempotency key `task:step` goes with every attempt,
 * so a retry after a timeout or a crash between the provider's answer and our commit
 * returns the same job instead of a second paid one (ARCHITECTURE §3.7). A job already
 * created or ended completes the item; a tenant at its concurrency cap parks it; one over its
 * token budget (policy reject) fails the job, as does a provider's final refusal or the last
 * attempt. Other failures retry with backoff (never sooner than the provider's `Retry-After`).
 *
 * Provider admission (ARCHITECTURE §4.8): a job over its provider's enqueued-token budget for
 * its model is parked until a job there ends; a rate limit at creation (a throttled
 * `ProviderError`, a 429) defers the job past the provider's `Retry-After`, or by exponential
 * backoff with full jitter, counting no attempt: only the step's deadline bounds it.
 */
export async function dispatchJob(
  d: JobWorkDeps & {
    webhookUrlFor: (provider: string) => string;
  },
  a: { jobId: string; lease: Lease; attempts: number; maxAttempts: number },
): Promise<DispatchJobResult> {
  const { jobId, lease } = a;
  const job = await d.store.getJob(jobId);
  if (!job || job.externalId !== null || isTerminalJob(job.status)) {
    await d.store.complete(lease);
    return { kind: "skipped" };
  }
  const failJob = async (
    code: "PROVIDER_UNKNOWN" | "BUDGET_EXCEEDED" | "PROVIDER_ERROR",
    message: string,
  ) => {
    await d.store.failJob(lease, jobId, toErrorInfo(new LonghaulError(code, message)));
    return { kind: "failed" as const, code, provider: job.provider };
  };
  const provider = d.providers.find(job.provider);
  if (!provider)
    return failJob("PROVIDER_UNKNOWN", `No provider "${job.provider}" is configured on this node.`);
  const admitted = await d.store.acquireJobSlot(lease, jobId, providerBudget(provider, job.input));
  if (admitted === "parked") return { kind: "parked" };
  if (admitted === "rejected") {
    return failJob(
      "BUDGET_EXCEEDED",
      "The tenant has spent its token budget for this period (policy reject); it resets at the start of the next period, or ask an admin to raise token_budget.",
    );
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
    return { kind: "created", externalId: created.jobId };
  } catch (err) {
    const retriable = !(err instanceof ProviderError) || err.retriable;
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof ProviderError && err.throttled) {
      const retryAt =
        d.clock.now() + throttleDelayMs(job.throttles + 1, err.retryAfterMs, { random: d.random });
      await d.store.throttleJob(lease, jobId, message, retryAt);
      return { kind: "throttled", jobId, retryAt, message, provider: job.provider };
    }
    if (!retriable || a.attempts >= a.maxAttempts) {
      return failJob(
        "PROVIDER_ERROR",
        `${job.provider} refused to create the job after ${a.attempts} attempt(s): ${message}`,
      );
    }
    const backoff = backoffMs(a.attempts, {
      baseMs: 500,
      maxMs: 60_000,
      ...(d.random ? { random: d.random } : {}),
    });
    const retryAfter = err instanceof ProviderError ? (err.retryAfterMs ?? 0) : 0;
    await d.store.fail(lease, message, d.clock.now() + Math.max(backoff, retryAfter));
    return { kind: "retrying", jobId, attempt: a.attempts, message, provider: job.provider };
  }
}

/**
 * The provider's enqueued-token budget a job is admitted under: its input's `model` among the
 * provider's `enqueuedTokens`; none when the provider sets none or the model is not listed.
 */
export function providerBudget(provider: Provider, input: unknown): ProviderBudget | undefined {
  const budgets = provider.enqueuedTokens;
  if (!budgets) return undefined;
  const model =
    typeof input === "object" && input !== null ? (input as { model?: unknown }).model : undefined;
  if (typeof model !== "string" || !Object.hasOwn(budgets, model)) return undefined;
  return { model, maxTokens: budgets[model]! };
}
