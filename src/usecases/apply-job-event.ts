import { LonghaulError } from "../core/errors.ts";
import type { ProviderEvent } from "../core/provider-event.ts";
import { briefEventFromSnapshot, parseBriefEvent } from "../providers/brief-event.ts";
import {
  JobResultFailure,
  type Provider,
  ProviderError,
  type ProviderLookup,
  type ResultFiles,
} from "../providers/provider.ts";
import type { ApplyOutcome, InboxEventRow, InboxStore, JobStore, Lease, QueueStore } from "../store/store.ts";

/** The source name the reconciler's synthesized events are recorded under; they are in the brief's shape. */
export const POLL_SOURCE = "poll";

export type ApplyJobEventResult =
  | { kind: "gone" }
  | { kind: "rejected"; note: string }
  | { kind: "applied"; event: ProviderEvent; outcome: ApplyOutcome }
  /** The event's source confirms with the provider: `answer` is the event id its answer was recorded under. */
  | { kind: "confirmed"; event: ProviderEvent; answer: string | null };

/**
 * Applies one recorded inbox event under the worker's lease: parse it with its provider (the
 * reconciler's own events are in the brief's shape), fetch the result when the provider's
 * terminal event carries none (lending it the blob store for result files), then one atomic, monotonic state change that also completes the
 * lease. An event no provider of this node can read is rejected with a note, not retried.
 * A failure to fetch the result throws, so the item retries with backoff; the event stays recorded.
 *
 * An event of a source in `confirmSources` moves nothing by its body: the job it names is
 * read back from the provider (`status`) and that answer recorded as the reconciler's event
 * (`poll:<job>:<state>`), which the same path then applies (ARCHITECTURE §4.3).
 */
export async function applyJobEvent(
  d: {
    inbox: InboxStore & Pick<JobStore, "applyJobEvent">;
    queue: QueueStore;
    providers: ProviderLookup;
    confirmSources?: ReadonlySet<string>;
    /** Where providers keep the result files they download (the blob store); absent: in memory. */
    files?: ResultFiles | undefined;
  },
  a: { inboxId: string; lease: Lease },
): Promise<ApplyJobEventResult> {
  const { inboxId, lease } = a;
  const ev = await d.inbox.getInboxEvent(inboxId);
  if (!ev) {
    await d.queue.complete(lease);
    return { kind: "gone" };
  }
  const reject = async (note: string): Promise<ApplyJobEventResult> => {
    await d.inbox.rejectInboxEvent(lease, inboxId, note);
    return { kind: "rejected", note };
  };
  const provider = d.providers.find(ev.provider);
  if (!provider) return reject(`no provider "${ev.provider}" on this node`);
  let parsed: ProviderEvent;
  try {
    const body: unknown = JSON.parse(ev.body.toString("utf8"));
    parsed =
      ev.source === POLL_SOURCE ? parseBriefEvent(body, "reconciler event") : provider.parseEvent(body);
  } catch (err) {
    return reject(err instanceof Error ? err.message : String(err));
  }
  if (ev.source !== POLL_SOURCE && d.confirmSources?.has(ev.source)) {
    return confirmWithProvider(d.inbox, provider, ev, parsed, lease, reject);
  }
  if (parsed.type === "job.succeeded" && parsed.output === undefined && provider.fetchResult) {
    try {
      const result = await provider.fetchResult(parsed.jobId, { files: d.files });
      parsed = { ...parsed, output: result.output, ...(result.usage ? { usage: result.usage } : {}) };
    } catch (err) {
      // A result the provider wrote but no one can read (a result file that is not JSON Lines)
      // reads the same on every retry: the job fails, saying where, instead of retrying forever.
      // So does a result the adapter finds to be a failure (JobResultFailure).
      const failure =
        err instanceof LonghaulError && err.code === "PROVIDER_RESULT_INVALID"
          ? { code: err.code, message: err.message }
          : err instanceof JobResultFailure
            ? err.failure
            : null;
      if (failure === null) throw err;
      parsed = { eventId: parsed.eventId, type: "job.failed", jobId: parsed.jobId, error: failure };
    }
  }
  const outcome = await d.inbox.applyJobEvent(lease, inboxId, ev.provider, parsed);
  return { kind: "applied", event: parsed, outcome };
}

/**
 * Reads the job an unconfirmed event names from its provider and records the answer in its
 * place. A refusal the provider says is final rejects the event with a note; any other
 * failure throws, so the item retries with backoff.
 */
async function confirmWithProvider(
  inbox: InboxStore,
  provider: Provider,
  ev: InboxEventRow,
  claimed: ProviderEvent,
  lease: Lease,
  reject: (note: string) => Promise<ApplyJobEventResult>,
): Promise<ApplyJobEventResult> {
  if (!provider.status) {
    return reject(`provider "${ev.provider}" has no status call to confirm this source's events with`);
  }
  let snapshot: Awaited<ReturnType<NonNullable<Provider["status"]>>>;
  try {
    snapshot = await provider.status(claimed.jobId);
  } catch (err) {
    if (err instanceof ProviderError && !err.retriable) {
      return reject(`the provider refused to confirm job ${claimed.jobId}: ${err.message}`);
    }
    throw err;
  }
  const brief = briefEventFromSnapshot({ ...snapshot, jobId: claimed.jobId });
  const answer = brief && {
    source: POLL_SOURCE,
    provider: ev.provider,
    eventId: brief.id,
    body: Buffer.from(JSON.stringify(brief)),
  };
  const note = answer
    ? `not applied by its body: confirmed with the provider, which reports ${snapshot.status} (recorded as ${answer.eventId})`
    : `not applied by its body: the provider reports ${snapshot.status}, which moves no job`;
  await inbox.recordConfirmation(
    lease,
    ev.id,
    { type: claimed.type, jobExternalId: claimed.jobId, note },
    answer,
  );
  return { kind: "confirmed", event: claimed, answer: answer ? answer.eventId : null };
}
