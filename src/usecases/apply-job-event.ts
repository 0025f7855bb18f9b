import type { ProviderEvent } from "../core/provider-event.ts";
import { parseBriefEvent } from "../providers/brief-event.ts";
import type { Provider } from "../providers/provider.ts";
import type { ApplyOutcome, InboxStore, Lease, QueueStore } from "../store/store.ts";

/** The source name the reconciler's synthesized events are recorded under; they are in the brief's shape. */
export const POLL_SOURCE = "poll";

export type ApplyJobEventResult =
  | { kind: "gone" }
  | { kind: "rejected"; note: string }
  | { kind: "applied"; event: ProviderEvent; outcome: ApplyOutcome };

/**
 * Applies one recorded inbox event under the worker's lease: parse it with its provider (the
 * reconciler's own events are in the brief's shape), fetch the result when the provider's
 * terminal event carries none, then one atomic, monotonic state change that also completes the
 * lease. An event no provider of this node can read is rejected with a note, not retried.
 * A failure to fetch the result throws, so the item retries with backoff; the event stays recorded.
 */
export async function applyJobEvent(
  d: { inbox: InboxStore; queue: QueueStore; providers: { find(name: string): Provider | undefined } },
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
  if (parsed.type === "job.succeeded" && parsed.output === undefined && provider.fetchResult) {
    const result = await provider.fetchResult(parsed.jobId);
    parsed = { ...parsed, output: result.output, ...(result.usage ? { usage: result.usage } : {}) };
  }
  const outcome = await d.inbox.applyJobEvent(lease, inboxId, ev.provider, parsed);
  return { kind: "applied", event: parsed, outcome };
}
