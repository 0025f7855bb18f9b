import type { Static } from "typebox";
import { shownRecipient } from "../core/notification.ts";
import { inlineValue, payloadRef } from "../core/payload.ts";
import { type ApprovalConfig, decidedBy } from "../core/wait.ts";
import type {
  ApprovalDecisionRow,
  ArtifactRow,
  JobRow,
  NotificationRow,
  StepRow,
  TaskDetail,
  TaskRow,
} from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";
import type {
  Artifact,
  Job,
  Notification,
  Step,
  TaskDetail as TaskDetailJson,
  TaskSummary,
} from "../wire/tasks.ts";
import { type PayloadView, payloadPath } from "./payload-view.ts";

/** A stored time (ms since the epoch) as the wire's ISO 8601 string; null stays null. */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/**
 * A view that reads nothing and mints no link: a value kept in the blob store shows as `null`
 * (the operator's CLI, which reads the store without the API's keys).
 */
const bareView: PayloadView = (stored) => ({
  value: payloadRef(stored) === null ? inlineValue(stored) : null,
});

/** A stored value as the wire shows it under `name`: the value, and `<name>_url` when the view links it. */
function shown(name: string, stored: unknown, path: string, view: PayloadView): Record<string, unknown> {
  const v = view(stored, path);
  return v.url === undefined ? { [name]: v.value } : { [name]: v.value, [`${name}_url`]: v.url };
}

/**
 * The public JSON of a task (ARCHITECTURE §7); snake_case on the wire. `view` shows its input
 * and output (§4.10): without one, a value kept in the blob store is `null`.
 */
export function taskSummary(t: TaskRow, view: PayloadView = bareView): Static<typeof TaskSummary> {
  return {
    task_id: t.id,
    type: t.type,
    status: t.status,
    ...(shown("input", t.input, payloadPath.input(t.id), view) as { input: unknown }),
    ...(shown("output", t.output, payloadPath.output(t.id), view) as { output: unknown }),
    error: t.error,
    client_request_id: t.clientRequestId,
    user_id: t.userId,
    trace_id: t.traceId,
    rerun_of: t.rerunOf ?? null,
    created_at: iso(t.createdAt),
    updated_at: iso(t.updatedAt),
  };
}

export interface DetailContext {
  urls: CapabilityUrls;
  decisions: Map<string, ApprovalDecisionRow[]>;
  /** Each approval step's messages; absent: none shown. */
  notifications?: Map<string, NotificationRow[]>;
  /**
   * `false` for a reader holding a read token: a waiting step's callback and approval links
   * are capabilities to write, and a read token must not hand them out.
   */
  links?: boolean;
  /** How input, output and step results are shown; default `null` for a value in the blob store. */
  view?: PayloadView;
}

/** What a waiting step shows its own tenant it waits for (ARCHITECTURE §7): links, approvers, match. */
function waitingFor(t: TaskRow, s: StepRow, ctx: DetailContext): Record<string, unknown> {
  if (s.status !== "waiting") return {};
  if (ctx.links === false) {
    if (s.kind === "approval") return { quorum: (s.config as ApprovalConfig).quorum };
    if (s.kind === "wait_event") return { match: s.config };
    return {};
  }
  const ws = { stepId: s.stepId, attempts: s.attempts, deadlineAt: s.deadlineAt };
  if (s.kind === "callback") return { callback_url: ctx.urls.callback(t.tenantId, t.id, ws) };
  if (s.kind === "approval") {
    const config = s.config as ApprovalConfig;
    const named = config.approvers.length > 0;
    const people = named ? config.approvers : [undefined];
    const decided = ctx.decisions.get(s.stepId) ?? [];
    // `approval_url` takes either decision in its body and serves a page with both buttons;
    // `approve_url` and `reject_url` decide one way each, for one-click buttons. Each named
    // approver has their own; a link naming nobody exists only without named approvers or
    // when the step allows a shared one, so no approver's link is ever handed out as shared.
    const links = people.map((who) => {
      const mine = who === undefined ? undefined : decided.find((x) => x.approver === who);
      return {
        approver: who ?? null,
        status: mine === undefined ? "pending" : mine.decision === "approve" ? "approved" : "rejected",
        approval_url: ctx.urls.approval(t.tenantId, t.id, ws, "decide", who),
        approve_url: ctx.urls.approval(t.tenantId, t.id, ws, "approve", who),
        reject_url: ctx.urls.approval(t.tenantId, t.id, ws, "reject", who),
        ...(mine === undefined
          ? {}
          : {
              decided_at: iso(mine.decidedAt),
              by: mine.approver,
              ...(mine.channel === null ? {} : { channel: mine.channel }),
              comment: mine.comment,
            }),
      };
    });
    const shared = !named
      ? links[0]!.approval_url
      : config.allowShared === true
        ? ctx.urls.approval(t.tenantId, t.id, ws, "decide", undefined)
        : undefined;
    return {
      ...(shared === undefined ? {} : { approval_url: shared }),
      approvals: links,
      quorum: config.quorum,
    };
  }
  if (s.kind === "wait_event") return { match: s.config };
  return {};
}

function step(t: TaskRow, s: StepRow, jobs: Map<string, JobRow>, ctx: DetailContext): Static<typeof Step> {
  const job = s.jobId ? jobs.get(s.jobId) : undefined;
  const decisions = ctx.decisions.get(s.stepId);
  return {
    id: s.stepId,
    kind: s.kind,
    status: s.status,
    attempts: s.attempts,
    ...(shown("output", s.output, payloadPath.step(t.id, s.stepId), ctx.view ?? bareView) as {
      output: unknown;
    }),
    error: s.error,
    ...(job ? { provider: job.provider, job_id: job.externalId } : {}),
    ...waitingFor(t, s, ctx),
    ...(decisions?.length
      ? {
          decisions: decisions.map((x) => {
            const who = decidedBy(s.config as ApprovalConfig, x.approver, x.claimedBy);
            return {
              approver: who.approver,
              ...(who.claimedBy === null ? {} : { claimed_by: who.claimedBy }),
              decision: x.decision,
              comment: x.comment,
              decided_at: iso(x.decidedAt),
              ...(x.channel === null ? {} : { channel: x.channel }),
              ...(x.keyId === null ? {} : { key_id: x.keyId }),
              ...(x.userId === null ? {} : { user_id: x.userId }),
              // Where a decision came from is the tenant's to see, not a read token's holder's.
              ...(ctx.links === false || x.address === null ? {} : { address: x.address }),
              ...(ctx.links === false || x.userAgent === null ? {} : { user_agent: x.userAgent }),
            };
          }),
        }
      : {}),
    ...notificationsOf(s, ctx),
    ...(s.lateOutput != null ? { late_result: s.lateOutput } : {}),
    deadline: iso(s.deadlineAt),
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
  };
}

/** An approval step's messages: where each went, how it went, and its last error. */
/** An approval's message as the API shows it: where it went, never a URL's path (§4.4). */
export function notificationJson(n: NotificationRow): Static<typeof Notification> {
  return {
    id: n.id,
    channel: n.channel,
    to: shownRecipient(n.target, n.approver),
    approver: n.approver,
    reason: n.reason,
    status: n.state,
    attempts: n.attempts,
    ...(n.lastError === null ? {} : { last_error: n.lastError }),
    ...(n.sentAt === null ? {} : { sent_at: iso(n.sentAt) }),
  };
}

function notificationsOf(s: StepRow, ctx: DetailContext): { notifications?: Static<typeof Notification>[] } {
  const rows = ctx.notifications?.get(s.stepId);
  // Where messages went (addresses, channels) is the tenant's to see, not a read token's holder's.
  if (s.kind !== "approval" || !rows?.length || ctx.links === false) return {};
  return {
    notifications: rows.map(notificationJson),
  };
}

function job(j: JobRow): Static<typeof Job> {
  return {
    id: j.id,
    step_id: j.stepId,
    provider: j.provider,
    job_id: j.externalId,
    status: j.status,
    output: j.output,
    error: j.error,
    usage: j.usage,
    created_at: iso(j.createdAt),
    updated_at: iso(j.updatedAt),
  };
}

export function taskDetail(d: TaskDetail, ctx: DetailContext): Static<typeof TaskDetailJson> {
  const jobs = new Map(d.jobs.map((j) => [j.id, j]));
  return {
    ...taskSummary(d.task, ctx.view),
    steps: d.steps.map((s) => step(d.task, s, jobs, ctx)),
    jobs: d.jobs.map(job),
    artifacts: d.artifacts.map((a) => artifact(a, ctx.urls)),
    reruns: d.reruns ?? [],
  };
}

/** The path an artifact's bytes are served at. */
export function artifactPath(taskId: string, name: string): string {
  return `/v1/tasks/${encodeURIComponent(taskId)}/artifacts/${encodeURIComponent(name)}`;
}

function artifact(a: ArtifactRow, urls: CapabilityUrls): Static<typeof Artifact> {
  return {
    name: a.name,
    url: urls.link(artifactPath(a.taskId, a.name)),
    content_type: a.contentType,
    size: a.size,
    sha256: a.sha256,
  };
}
