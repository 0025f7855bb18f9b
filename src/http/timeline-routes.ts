import { LonghaulError } from "../core/errors.ts";
import { type ApprovalConfig, decidedEvent } from "../core/wait.ts";
import type {
  EventLogStore,
  InboxEventRow,
  InboxStore,
  JobRow,
  StepRow,
  TaskEventRow,
  TaskStore,
} from "../store/store.ts";
import { POLL_SOURCE } from "../usecases/apply-job-event.ts";
import { IdParams } from "../wire/common.ts";
import { Timeline } from "../wire/events.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

/** How many task events a timeline shows; a longer log is cut and says so. */
const MAX_EVENTS = 1000;

/**
 * What one inbox row meant for its job. `duplicate`: the same state change had already been
 * applied from another delivery (a webhook and a reconciler poll, say); `late`: the result came
 * after the step's deadline and was kept, not applied; `out_of_order`: an older state arriving
 * after a newer one (ARCHITECTURE §3.3).
 */
export type DeliveryVerdict =
  | "applied"
  | "duplicate"
  | "late"
  | "out_of_order"
  | "unmatched"
  | "invalid"
  | "received";

export interface TimelineDelivery {
  kind: "delivery";
  at: string;
  id: string;
  origin: "webhook" | "poll";
  source: string;
  provider: string;
  event_id: string;
  type: string | null;
  job_id: string | null;
  status: InboxEventRow["status"];
  verdict: DeliveryVerdict;
  /**
   * A webhook that failed verification was refused with 401 and never stored, so every stored
   * webhook passed; a poll is the reconciler asking the provider itself, and carries no signature.
   */
  signature: "verified" | null;
  note: string | null;
}

export interface TimelineEvent {
  kind: "event";
  at: string;
  seq: number;
  type: string;
  data: unknown;
}

export type TimelineEntry = TimelineEvent | TimelineDelivery;

const iso = (ms: number) => new Date(ms).toISOString();

/** Inbox rows of one task's jobs as timeline entries, each with its verdict. Rows must be oldest first. */
export function deliveries(rows: InboxEventRow[]): TimelineDelivery[] {
  const applied = new Set<string>();
  return rows.map((r) => {
    const key = `${r.jobExternalId}\u0000${r.type}`;
    const verdict: DeliveryVerdict =
      r.status !== "ignored"
        ? r.status
        : r.note?.startsWith("late result")
          ? "late"
          : applied.has(key)
            ? "duplicate"
            : "out_of_order";
    if (r.status === "applied") applied.add(key);
    const poll = r.source === POLL_SOURCE;
    return {
      kind: "delivery",
      at: iso(r.receivedAt),
      id: r.id,
      origin: poll ? "poll" : "webhook",
      source: r.source,
      provider: r.provider,
      event_id: r.eventId,
      type: r.type,
      job_id: r.jobExternalId,
      status: r.status,
      verdict,
      signature: poll ? null : "verified",
      note: r.note,
    };
  });
}

/**
 * A `step.decided` event says who decided as `decidedEvent` does now, from its step's
 * approvers: a name the holder of an anonymous link typed is `claimed_by`, never `approver`.
 * Events stored before claims were told apart named it as the approver; they read the same.
 */
function decided(data: unknown, step: StepRow | undefined): unknown {
  const d = data as { step_id?: unknown; approver?: unknown; decision?: unknown; comment?: unknown };
  const config = step?.config as Partial<ApprovalConfig> | null | undefined;
  // Written as claims are now (a claim's name already apart), or not an approval's event.
  if (typeof d?.approver !== "string" || "claimed_by" in d || !Array.isArray(config?.approvers)) return data;
  if (d.decision !== "approve" && d.decision !== "reject") return data;
  return {
    ...d,
    ...decidedEvent(
      { approvers: config.approvers },
      {
        stepId: String(d.step_id),
        approver: d.approver,
        decision: d.decision,
        comment: typeof d.comment === "string" ? d.comment : null,
      },
    ),
  };
}

/** Task events as timeline entries; `steps` are the task's, for what a `step.decided` event says. */
export function timelineEvents(rows: TaskEventRow[], steps: StepRow[]): TimelineEvent[] {
  const byId = new Map(steps.map((s) => [s.stepId, s]));
  return rows.map((e) => ({
    kind: "event",
    at: iso(e.createdAt),
    seq: e.seq,
    type: e.type,
    data:
      e.type === "step.decided"
        ? decided(e.data, byId.get(String((e.data as { step_id?: unknown })?.step_id)))
        : e.data,
  }));
}

/** The inbox rows of every job of a task, oldest first, one store read per provider. */
async function inboxOf(
  store: EventLogStore & InboxStore & TaskStore,
  jobs: JobRow[],
): Promise<InboxEventRow[]> {
  const byProvider = new Map<string, string[]>();
  for (const j of jobs) {
    if (j.externalId === null) continue;
    byProvider.set(j.provider, [...(byProvider.get(j.provider) ?? []), j.externalId]);
  }
  const rows: InboxEventRow[] = [];
  for (const [provider, ids] of byProvider) rows.push(...(await store.inboxForJobs(provider, ids)));
  return rows.sort((a, b) => a.receivedAt - b.receivedAt || a.id.localeCompare(b.id));
}

/**
 * `GET /v1/tasks/:id/timeline`: the external-job ledger of one task, ordered by time: its task
 * events and every delivery (webhook or reconciler poll) recorded for its jobs. A delivery sorts
 * before an event of the same millisecond, since applying it is what emitted the event.
 * Scoped by the caller's tenant (ARCHITECTURE §3.6).
 */
export function timelineRoutes(app: Api, store: EventLogStore & InboxStore & TaskStore): void {
  const schema = operation("Task events and webhook deliveries of the task's jobs, by time", {
    params: IdParams,
    response: { 200: Timeline },
  });
  app.get("/v1/tasks/:id/timeline", { schema }, async (req) => {
    const d = await store.getTask(req.tenant.id, req.params.id);
    if (!d) throw new LonghaulError("TASK_NOT_FOUND", `No task ${req.params.id} for this API key.`);
    const log = await store.taskEvents(req.tenant.id, 0, MAX_EVENTS + 1, d.task.id);
    const rank = (e: TimelineEntry) => (e.kind === "delivery" ? 0 : 1);
    const entries: TimelineEntry[] = [
      ...deliveries(await inboxOf(store, d.jobs)),
      ...timelineEvents(log.slice(0, MAX_EVENTS), d.steps),
    ].sort((a, b) => a.at.localeCompare(b.at) || rank(a) - rank(b));
    return { task_id: d.task.id, entries, truncated: log.length > MAX_EVENTS };
  });
}
