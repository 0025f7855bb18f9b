import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";

/** Applies one inbox event: parse with its provider, then one atomic, monotonic state change. */
export async function applyEvent(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  const inboxId = String(item.payload.inboxId);
  const ev = await d.store.getInboxEvent(inboxId);
  if (!ev) return d.store.complete(lease);
  const provider = d.providers.find(ev.provider);
  if (!provider) return d.store.rejectInboxEvent(lease, inboxId, `no provider "${ev.provider}" on this node`);
  let parsed: ReturnType<typeof provider.parseEvent>;
  try {
    parsed = provider.parseEvent(JSON.parse(ev.body.toString("utf8")));
  } catch (err) {
    return d.store.rejectInboxEvent(lease, inboxId, err instanceof Error ? err.message : String(err));
  }
  const outcome = await d.store.applyJobEvent(lease, inboxId, ev.provider, parsed);
  d.log.debug({ inboxId, type: parsed.type, jobId: parsed.jobId, outcome }, "event applied");
}
