import { backoffMs } from "../core/backoff.ts";
import { isTerminalJob, nextJobStatus } from "../core/job.ts";
import { briefEventFromSnapshot } from "../providers/brief-event.ts";
import { ProviderError } from "../providers/provider.ts";
import type { Lease } from "../store/store.ts";
import { POLL_SOURCE } from "./apply-job-event.ts";
import type { JobWorkDeps } from "./job-deps.ts";

export type PollJobResult =
  | { kind: "skipped" }
  | { kind: "refused"; jobId: string; message: string; provider: string }
  /** `dead`: that was the item's last attempt; it is dead-lettered. */
  | { kind: "retrying"; jobId: string; message: string; provider: string; dead: boolean }
  | { kind: "polled"; jobId: string; state: string; moved: boolean };

/**
 * The reconciler, one job at a time: a job with no terminal event past its poll-after time
 * is asked for its state. What it says enters the inbox as a synthesized event
 * (`poll:<job>:<state>`), so the one apply path handles it and a webhook that arrives too
 * stays a duplicate in effect. Polls back off until the job ends; a provider's final refusal
 * ends them (the job waits for its webhook or its timeout).
 */
export async function pollJob(
  d: JobWorkDeps & {
    /** The first poll's delay, which later ones back off from. */
    pollAfterMs: number;
  },
  a: { jobId: string; attempt: number; lease: Lease; attempts: number },
): Promise<PollJobResult> {
  const { jobId, lease } = a;
  const job = await d.store.getJob(jobId);
  const provider = job ? d.providers.find(job.provider) : undefined;
  if (!job?.externalId || isTerminalJob(job.status) || !provider?.status) {
    await d.store.complete(lease);
    return { kind: "skipped" };
  }
  let snapshot: Awaited<ReturnType<NonNullable<typeof provider.status>>>;
  try {
    snapshot = await provider.status(job.externalId);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof ProviderError && !err.retriable) {
      await d.store.complete(lease);
      return { kind: "refused", jobId, message, provider: job.provider };
    }
    const after = await d.store.fail(lease, message, d.clock.now() + backoffMs(a.attempts, { baseMs: 2000 }));
    return { kind: "retrying", jobId, message, provider: job.provider, dead: after === "dead" };
  }
  const ev = briefEventFromSnapshot({ ...snapshot, jobId: job.externalId });
  const moved = ev !== null && nextJobStatus(job.status, ev.type as never) !== null;
  const event = moved
    ? { source: POLL_SOURCE, provider: job.provider, eventId: ev.id, body: Buffer.from(JSON.stringify(ev)) }
    : null;
  const next = isTerminalJob(snapshot.status)
    ? null
    : {
        runAt: d.clock.now() + backoffMs(a.attempt + 1, { baseMs: d.pollAfterMs, maxMs: 60 * 60_000 }),
        attempt: a.attempt + 1,
      };
  await d.store.recordPoll(lease, jobId, event, next);
  return { kind: "polled", jobId, state: snapshot.status, moved };
}
