import type { ComponentChildren } from "preact";
import type {
  TaskJob as Job,
  TimelineDelivery,
  TimelineEntry,
  TimelineEvent,
  Verdict,
} from "../../src/client/index.ts";
import { decidedBy } from "./decided-by.ts";
import { label, plural, preciseTime, utcTitle, viewerZone, zoneName } from "./format.ts";
import { Badge, ClaimMark, When } from "./ui.tsx";

const verdictText: Record<Verdict, string> = {
  applied: "applied",
  duplicate: "duplicate — already applied",
  late: "late — kept, not applied",
  out_of_order: "out of order — ignored",
  unmatched: "unmatched — no job with this id yet",
  invalid: "invalid — could not be parsed",
  received: "received — not applied yet",
};

const tokens = (j: Job | undefined) => j?.usage?.total_tokens;

function JobRef({
  job,
  externalId,
  provider,
}: {
  job?: Job | undefined;
  externalId?: unknown;
  provider?: unknown;
}) {
  const ext = job?.job_id ?? (typeof externalId === "string" ? externalId : null);
  const prov = job?.provider ?? (typeof provider === "string" ? provider : null);
  if (!ext && !prov) return null;
  return (
    <span class="mono">
      {prov ?? "?"}:{ext ?? "(not created yet)"}
    </span>
  );
}

function eventLine(
  e: TimelineEvent,
  jobs: Map<string, Job>,
): { title: ComponentChildren; detail?: ComponentChildren } {
  // Each event type carries its own fields; the timeline reads the ones it knows.
  const d = (e.data ?? {}) as Record<string, unknown>;
  const step = typeof d.step_id === "string" ? d.step_id : null;
  const job = typeof d.job_id === "string" ? jobs.get(d.job_id) : undefined;
  const [scope, what = ""] = e.type.split(/\.(.+)/);
  if (e.type === "task.log") {
    // A line of the task's own `log`: its level, message and fields as the task code gave them.
    const fields = d.fields && typeof d.fields === "object" ? JSON.stringify(d.fields) : null;
    return {
      title: (
        <>
          <span class="mono">{String(d.level ?? "info")}</span> {String(d.message ?? "")}
        </>
      ),
      detail: fields ? <span class="mono">{fields}</span> : undefined,
    };
  }
  if (scope === "task") {
    if (what === "created") return { title: <>Task created</> };
    if (what === "rerun") {
      // A re-run's first event after its creation: what it re-runs and what it reuses.
      const reused = typeof d.reused_steps === "number" ? d.reused_steps : 0;
      return {
        title: (
          <>
            Re-run of <span class="mono">{String(d.rerun_of ?? "")}</span>
          </>
        ),
        detail:
          d.from === "start" ? "from the start" : `from the failed step, ${plural(reused, "step")} reused`,
      };
    }
    const err = d.error as { code?: string; message?: string } | undefined;
    return {
      title: (
        <>
          Task <Badge status={what} />
        </>
      ),
      detail: err ? (
        <>
          <code>{err.code}</code> {err.message}
        </>
      ) : undefined,
    };
  }
  if (scope === "job") {
    const t = tokens(job);
    return {
      title: (
        <>
          Job {what === "created" ? "created at the provider" : <Badge status={what} />} for step{" "}
          <b>{step}</b>
        </>
      ),
      detail: (
        <>
          <JobRef job={job} externalId={d.external_id} provider={d.provider} />
          {(what === "succeeded" || what === "failed") && t !== undefined ? (
            <span class="tokens"> · {t.toLocaleString()} tokens</span>
          ) : null}
        </>
      ),
    };
  }
  if (e.type === "step.decided") {
    const who = decidedBy(d);
    return {
      title: (
        <>
          <b>{who.name}</b>
          <ClaimMark claimed={who.claimed} /> {d.decision === "approve" ? "approved" : "rejected"} step{" "}
          <b>{step}</b>
        </>
      ),
      detail: d.comment ? <>“{String(d.comment)}”</> : undefined,
    };
  }
  if (e.type === "step.waiting") {
    return {
      title: (
        <>
          Step <b>{step}</b> waits ({label(String(d.kind ?? "?"))})
        </>
      ),
      detail: d.deadline ? (
        <>
          deadline <When at={String(d.deadline)} relative={false} />
        </>
      ) : undefined,
    };
  }
  if (e.type === "step.reminder" || e.type === "step.escalated") {
    return {
      title: (
        <>
          {e.type === "step.reminder" ? "Reminder sent" : "Escalated"} for step <b>{step}</b>
        </>
      ),
    };
  }
  if (scope === "step") {
    const err = d.error as { code?: string; message?: string } | undefined;
    return {
      title: (
        <>
          Step <b>{step}</b> <Badge status={what} />
        </>
      ),
      detail: err ? (
        <>
          <code>{err.code}</code> {err.message}
        </>
      ) : undefined,
    };
  }
  return { title: <span class="mono">{e.type}</span> };
}

function DeliveryRow({ e }: { e: TimelineDelivery }) {
  return (
    <li class={`tl tl-delivery v-${e.verdict}`} data-kind="delivery" data-verdict={e.verdict}>
      <time class="tl-time" dateTime={e.at} title={utcTitle(e.at)}>
        {preciseTime(e.at)}
      </time>
      <span class="tl-dot" />
      <div class="tl-body">
        <div class="tl-title">
          {e.origin === "poll" ? "Reconciler poll found" : "Webhook"}{" "}
          <span class="mono">{e.type ?? "(unparsed)"}</span>{" "}
          <span class={`verdict v-${e.verdict}`}>{verdictText[e.verdict]}</span>
        </div>
        <div class="tl-detail">
          <span class="mono">
            {e.provider}:{e.job_id ?? "?"}
          </span>
          {" · "}
          {e.origin === "poll" ? (
            <span title="The reconciler asked the provider for the job's state; nothing to verify.">
              status poll
            </span>
          ) : (
            <span
              class="sig"
              title="Deliveries that fail the signature check are refused with 401 and never stored."
            >
              ✓ signature verified
            </span>
          )}
          {" · "}source <span class="mono">{e.source}</span> · event <span class="mono">{e.event_id}</span>
          {e.note ? <div class="muted">{e.note}</div> : null}
        </div>
      </div>
    </li>
  );
}

/** The external-job ledger of one task: task events, webhook deliveries and reconciler polls by time. */
export function TimelineView({
  entries,
  jobs,
  truncated,
}: {
  entries: TimelineEntry[];
  jobs: Job[];
  truncated: boolean;
}) {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  return (
    <div>
      <p class="muted small tl-zone">
        Times in {viewerZone()} ({zoneName()}); hover one for UTC.
      </p>
      <ol class="timeline">
        {entries.map((e) => {
          if (e.kind === "delivery") return <DeliveryRow key={e.id} e={e} />;
          const line = eventLine(e, byId);
          return (
            <li
              key={`s${e.seq}`}
              class={`tl tl-event t-${e.type.replace(/\./g, "-")}`}
              data-kind="event"
              data-type={e.type}
            >
              <time class="tl-time" dateTime={e.at} title={utcTitle(e.at)}>
                {preciseTime(e.at)}
              </time>
              <span class="tl-dot" />
              <div class="tl-body">
                <div class="tl-title">{line.title}</div>
                {line.detail ? <div class="tl-detail">{line.detail}</div> : null}
              </div>
            </li>
          );
        })}
      </ol>
      {truncated ? <p class="muted small">Only the first 1,000 events are shown.</p> : null}
      <p class="muted small footnote">
        Every webhook listed passed its signature check: a delivery with a bad or missing signature is refused
        (401) before it is stored. A redelivery of an event id already recorded is acknowledged and not stored
        again, so it does not appear; a second report of a state already applied (from another delivery or a
        poll) shows as duplicate.
      </p>
    </div>
  );
}
