import { backoffMs } from "../core/backoff.ts";
import { isTerminalJob, nextJobStatus } from "../core/job.ts";
import { briefEventFromSnapshot } from "../providers/brief-event.ts";
import { ProviderError } from "../providers/provider.ts";
import type { Lease, WorkItem } from "../store/store.ts";
import { POLL_SOURCE } from "../usecases/apply-job-event.ts";
import type { EngineDeps } from "./deps.ts";

/**
 * The reconciler, one job at a time: a job with no terminal event past its poll-after time
 * is asked for its state. What it says enters the inbox as a synthesized event
 * (`poll:<job>:<state>`), so the one apply path handles it and a webhook that arrives too
 * stays a duplicate in effect. Polls back off until the job ends.
 */
export async function poll(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  const jobId = String(item.payload.jobId);
  const attempt = Number(item.payload.attempt ?? 1);
  const job = await d.store.getJob(jobId);
  const provider = job ? d.providers.find(job.provider) : undefined;
  if (!job?.externalId || isTerminalJob(job.status) || !provider?.status) return d.store.complete(lease);
  let snapshot: Awaited<ReturnType<NonNullable<typeof provider.status>>>;
  try {
    snapshot = await provider.status(job.externalId);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof ProviderError && !err.retriable) {
      d.log.warn({ jobId, err: message }, "status poll refused; the job waits for its webhook or timeout");
      return d.store.complete(lease);
    }
    return void (await d.store.fail(
      lease,
      message,
      d.clock.now() + backoffMs(item.attempts, { baseMs: 2000 }),
    ));
  }
  const ev = briefEventFromSnapshot({ ...snapshot, jobId: job.externalId });
  const moves = ev !== null && nextJobStatus(job.status, ev.type as never) !== null;
  const event = moves
    ? { source: POLL_SOURCE, provider: job.provider, eventId: ev.id, body: Buffer.from(JSON.stringify(ev)) }
    : null;
  const pollAfter = d.pollAfterMs;
  const next = isTerminalJob(snapshot.status)
    ? null
    : {
        runAt: d.clock.now() + backoffMs(attempt + 1, { baseMs: pollAfter, maxMs: 60 * 60_000 }),
        attempt: attempt + 1,
      };
  if (moves)
    d.log.info({ jobId, state: snapshot.status }, "reconciler found a state the webhooks did not bring");
  await d.store.recordPoll(lease, jobId, event, next);
}
