import type { Lease, WorkItem } from "../store/store.ts";
import { applyJobEvent } from "../usecases/apply-job-event.ts";
import type { EngineDeps } from "./deps.ts";

/** The `apply_event` work item: applies one recorded inbox event (see `applyJobEvent`). */
export async function applyEvent(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  const inboxId = String(item.payload.inboxId);
  const r = await applyJobEvent(
    {
      inbox: d.store,
      queue: d.store,
      providers: d.providers,
      ...(d.confirmSources ? { confirmSources: d.confirmSources } : {}),
    },
    { inboxId, lease },
  );
  if (r.kind === "applied") {
    d.log.debug({ inboxId, type: r.event.type, jobId: r.event.jobId, outcome: r.outcome }, "event applied");
  } else if (r.kind === "confirmed") {
    d.log.debug({ inboxId, type: r.event.type, jobId: r.event.jobId, answer: r.answer }, "event confirmed");
  }
}
