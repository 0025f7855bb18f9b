import type { ProviderEvent } from "../core/provider-event.ts";
import { parseBriefEvent } from "../providers/brief-event.ts";
import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";
import { POLL_SOURCE } from "./poll.ts";

/**
 * Applies one inbox event: parse it with its provider (the reconciler's own events are in
 * the brief's shape), fetch the result when the provider's terminal event carries none, then
 * one atomic, monotonic state change.
 */
export async function applyEvent(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  const inboxId = String(item.payload.inboxId);
  const ev = await d.store.getInboxEvent(inboxId);
  if (!ev) return d.store.complete(lease);
  const provider = d.providers.find(ev.provider);
  if (!provider) return d.store.rejectInboxEvent(lease, inboxId, `no provider "${ev.provider}" on this node`);
  let parsed: ProviderEvent;
  try {
    const body: unknown = JSON.parse(ev.body.toString("utf8"));
    parsed =
      ev.source === POLL_SOURCE ? parseBriefEvent(body, "reconciler event") : provider.parseEvent(body);
  } catch (err) {
    return d.store.rejectInboxEvent(lease, inboxId, err instanceof Error ? err.message : String(err));
  }
  if (parsed.type === "job.succeeded" && parsed.output === undefined && provider.fetchResult) {
    // A failure here retries the item with backoff; the event stays recorded meanwhile.
    const result = await provider.fetchResult(parsed.jobId);
    parsed = { ...parsed, output: result.output, ...(result.usage ? { usage: result.usage } : {}) };
  }
  const outcome = await d.store.applyJobEvent(lease, inboxId, ev.provider, parsed);
  d.log.debug({ inboxId, type: parsed.type, jobId: parsed.jobId, outcome }, "event applied");
}
