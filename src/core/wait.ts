import { createHash } from "node:crypto";
import type { ErrorCode, ErrorInfo } from "./errors.ts";
import type { NotifyEntry } from "./notification.ts";
import type { StepRow } from "./step.ts";
import type { TaskRow } from "./task.ts";
import { type NewWorkItem, timer } from "./work-item.ts";

/**
 * What a suspended step waits for. A wait is registered (stored) before the function is
 * abandoned, so a callback, decision or event that arrives at any moment after that finds
 * it (ARCHITECTURE §3.5). Each has a deadline, enforced by a durable timer.
 */
export type WaitRequest = JobWait | CallbackWait | ApprovalWait | SleepWait | EventWait;

interface WaitBase {
  stepId: string;
  position: number;
  /** Milliseconds from registration to the deadline, or null for none. */
  timeoutMs: number | null;
}

export interface JobWait extends WaitBase {
  kind: "job";
  provider: string;
  input: unknown;
  pollAfterMs: number | null;
  /** Ask the provider to cancel the job when the step times out. Default true. */
  cancelOnTimeout: boolean;
  /** Tokens held against the tenant's budget while the job runs (see `declaredMaxTokens`). */
  maxTokens?: number | null;
}

export interface CallbackWait extends WaitBase {
  kind: "callback";
  /** A webhook source whose signature the callback must also carry. */
  verifySource: string | null;
}

/**
 * At an approval's deadline: decide it (`approve`, `reject`), resume with a value (`{default}`,
 * or `{resume}`, the same), fail the step (`fail`), or escalate once (`escalate`: the
 * escalation's approvers are added and notified, and the deadline moves on by the escalation's
 * delay; at that deadline the step times out). Absent: the step times out.
 */
export type OnTimeout =
  | "reject"
  | "approve"
  | "fail"
  | "escalate"
  | { default: unknown }
  | { resume: unknown };

export interface ApprovalConfig {
  approvers: string[];
  quorum: number;
  onTimeout: OnTimeout | null;
  title: string | null;
  description: string | null;
  /**
   * Names of task input fields (dotted for nested ones) the approval page shows; the rest of
   * the input is not shown to link holders. Absent in approvals stored before it existed.
   */
  show?: string[];
  remindAfterMs: number | null;
  escalateAfterMs: number | null;
  escalateTo: string[];
  /** With named approvers, also a link naming nobody (`approval_url`); its decisions are anonymous. */
  allowShared?: boolean;
  /** The task's requester (its `user_id`) may decide; refused with `SELF_APPROVAL` otherwise. */
  allowSelfApproval?: boolean;
  /** Where people are told (src/core/notification.ts); absent or empty: nobody is sent anything. */
  notify?: NotifyEntry[];
  /** The channels the escalation's approvers are told on; absent: `notify`'s. */
  escalateNotify?: NotifyEntry[] | null;
  /** Set once the escalation has happened, so it happens once. */
  escalated?: boolean;
  /** The original wait, by which an `escalate` timeout moves the deadline when no delay is given. */
  timeoutMs?: number | null;
}

export interface ApprovalWait extends WaitBase {
  kind: "approval";
  approval: ApprovalConfig;
}

export interface SleepWait extends WaitBase {
  kind: "sleep";
}

export interface EventMatch {
  /** The signal name, e.g. `invoice.paid`. */
  event: string;
  /** Every key must equal the signal's `data[key]`. */
  data: Record<string, unknown>;
}

export interface EventWait extends WaitBase {
  kind: "wait_event";
  match: EventMatch;
}

/** Whether a signal satisfies a wait's match. */
export function signalMatches(match: EventMatch, name: string, data: unknown): boolean {
  if (match.event !== name) return false;
  const d = (typeof data === "object" && data !== null ? data : {}) as Record<string, unknown>;
  return Object.entries(match.data).every(([k, v]) => JSON.stringify(d[k]) === JSON.stringify(v));
}

/**
 * What is wrong with an approval's approvers, quorum and shown fields, in words fit for an
 * error message after the step's name; null if nothing. A quorum above 1 needs named
 * approvers: anonymous link holders cannot be counted as distinct voters.
 */
export function approvalProblem(approvers: unknown, quorum: unknown, show: unknown): string | null {
  if (!Array.isArray(approvers) || !approvers.every((a) => typeof a === "string" && a.length > 0)) {
    return "approvers must be a list of non-empty strings";
  }
  if (typeof quorum !== "number" || !Number.isInteger(quorum) || quorum < 1) {
    return `quorum is ${JSON.stringify(quorum)}; it must be a whole number of at least 1`;
  }
  if (quorum > 1 && approvers.length === 0) {
    return `quorum is ${quorum} but no approvers are named; name at least ${quorum} approvers, or use quorum 1`;
  }
  if (approvers.length > 0 && quorum > approvers.length) {
    return `quorum is ${quorum} but only ${approvers.length} approvers are named`;
  }
  if (!Array.isArray(show) || !show.every((f) => typeof f === "string" && f.length > 0)) {
    return "show must be a list of input field names";
  }
  return null;
}

/** Who decides on an anonymous approval's link when the holder gives no name. */
export const ANONYMOUS_APPROVER = "anonymous";

/** Whether an approval's links each carry a named approver (read defensively: a stored config). */
export const namesApprovers = (
  config: Partial<Pick<ApprovalConfig, "approvers">> | null | undefined,
): boolean => Array.isArray(config?.approvers) && config.approvers.length > 0;

/**
 * Who made a decision, as far as longhaul knows. A named approver's links carry the name
 * signed into their token, so a decision through one is by that approver. An anonymous
 * approval's links name nobody: a name typed on its page (or sent as `approver`) is only what
 * the link's holder says, so the decision is by `anonymous` and the name is `claimedBy`.
 * Derived from the step's approvers, so decisions stored before claims were told apart read
 * the same way.
 */
export function decidedBy(
  config: Partial<Pick<ApprovalConfig, "approvers">> | null | undefined,
  approver: string | null,
  claimedBy: string | null = null,
): { approver: string; claimedBy: string | null } {
  const named = approver ?? ANONYMOUS_APPROVER;
  const anonymous = named === ANONYMOUS_APPROVER;
  if (namesApprovers(config)) return { approver: named, claimedBy: anonymous ? claimedBy : null };
  return { approver: ANONYMOUS_APPROVER, claimedBy: anonymous ? claimedBy : named };
}

/**
 * What an approval's output says of who decided: `by`, only an approver longhaul knows (a
 * named approver's link), else null; `claimed_by`, a name the holder of an anonymous link
 * typed, never checked, present only when one was given.
 */
function decider(
  config: ApprovalConfig,
  d: { approver: string | null; claimedBy?: string | null },
): { by: string | null; claimed_by?: string } {
  const who = decidedBy(config, d.approver, d.claimedBy ?? null);
  if (namesApprovers(config) && who.approver !== ANONYMOUS_APPROVER) return { by: who.approver };
  return who.claimedBy === null ? { by: null } : { by: null, claimed_by: who.claimedBy };
}

/** The outcome of an approval step from the decisions so far, or null while it can still go either way. */
export function approvalOutcome(
  config: ApprovalConfig,
  decisions: {
    approver: string | null;
    claimedBy?: string | null;
    decision: "approve" | "reject";
    comment: string | null;
  }[],
): { approved: boolean; by: string | null; claimed_by?: string; comment: string | null } | null {
  const approvals = decisions.filter((d) => d.decision === "approve");
  const rejections = decisions.filter((d) => d.decision === "reject");
  const lastApproval = approvals.at(-1);
  if (lastApproval && approvals.length >= config.quorum) {
    return { approved: true, ...decider(config, lastApproval), comment: lastApproval.comment };
  }
  // Reject once the quorum can no longer be reached. Without named approvers (quorum 1 only,
  // checked at submit) anyone with the link decides, so the first rejection decides.
  const voters = config.approvers.length;
  const lastRejection = rejections.at(-1);
  if (lastRejection && (voters === 0 || rejections.length > voters - config.quorum)) {
    return { approved: false, ...decider(config, lastRejection), comment: lastRejection.comment };
  }
  return null;
}

/** What an approval resolves to when its deadline passes, or null to time the step out. */
export function approvalOnTimeout(onTimeout: OnTimeout | null): { output: unknown } | null {
  if (onTimeout === null || onTimeout === "fail" || onTimeout === "escalate") return null;
  if (onTimeout === "reject")
    return { output: { approved: false, by: null, comment: "no decision before the deadline" } };
  if (onTimeout === "approve")
    return { output: { approved: true, by: null, comment: "approved by default at the deadline" } };
  return { output: "resume" in onTimeout ? onTimeout.resume : onTimeout.default };
}

/** Whether `v` is an `onTimeout` policy, read defensively (graph input, stored configs). */
export function isOnTimeout(v: unknown): v is OnTimeout {
  if (v === "reject" || v === "approve" || v === "fail" || v === "escalate") return true;
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return keys.length === 1 && (keys[0] === "default" || keys[0] === "resume");
}

export const ON_TIMEOUT_HINT =
  '"approve", "reject", "fail", "escalate", {"resume": <value>} or {"default": <value>}';

/** What a callback or approval answered: accepted, or why not (mapped to 409/410 by the API). */
export type WaitAnswer =
  | "accepted"
  | "already_used"
  | "expired"
  | "canceled"
  | "not_found"
  | "duplicate_decision";

/**
 * An approval decision's answer: a wait answer, `self_approval` for the task's own requester
 * on a step that does not allow it, `shared_not_allowed` for a link naming nobody on a step
 * whose approvers are named and that allows no shared link.
 */
export type DecisionAnswer = WaitAnswer | DecisionRefusal;

/** Why a decision is refused before it is recorded; see `decisionIdentity`. */
export type DecisionRefusal = "self_approval" | "shared_not_allowed" | "not_an_approver";

/**
 * Who a decision is recorded as, or why it is refused (ARCHITECTURE §4.4): a named approver
 * only through their own link, or an API key naming one of the step's approvers; a link that
 * names nobody on a step with named approvers only when the step allows a shared link, and
 * then as `anonymous` with the typed name kept as a claim; never the task's own requester
 * (`user_id`, compared without case) unless the step allows self-approval, whichever way they
 * came. On an approval without named approvers the typed name stays the row's approver (one
 * decision per name, as before), read back as a claim by `decidedBy`.
 */
export function decisionIdentity(
  config: ApprovalConfig,
  requester: string | null,
  d: { approver: string | null; claimedBy?: string | null; channel: DecisionChannel; userId?: string | null },
): { approver: string; claimedBy: string | null } | DecisionRefusal {
  const claimedBy = d.claimedBy ?? null;
  const named = namesApprovers(config);
  if (d.approver !== null && named && !config.approvers.includes(d.approver)) return "not_an_approver";
  if (d.approver === null && named && d.channel !== "api" && config.allowShared !== true) {
    return "shared_not_allowed";
  }
  if (requester !== null && config.allowSelfApproval !== true) {
    const me = requester.trim().toLowerCase();
    const same = (x: string | null | undefined) => typeof x === "string" && x.trim().toLowerCase() === me;
    if (same(d.approver) || same(claimedBy) || same(d.userId)) return "self_approval";
  }
  if (d.approver !== null) return { approver: d.approver, claimedBy: null };
  if (named) return { approver: ANONYMOUS_APPROVER, claimedBy };
  return { approver: claimedBy ?? ANONYMOUS_APPROVER, claimedBy };
}

/** A callback's answer: a wait answer, or `duplicate` for the body that already completed the step. */
export type CallbackAnswer = WaitAnswer | "duplicate";

/** A call on a callback URL, its token verified. */
export interface CallbackDelivery {
  tenantId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  output: unknown;
  body: Buffer;
}

/** One approver's stored decision on an approval step. */
/**
 * How a decision came: `link`, a named approver's own link; `shared`, a link naming nobody (an
 * approval without named approvers, or one that allows a shared link); `api`, an API key;
 * `slack`, a button of a Slack message, clicked by the Slack user mapped to the approver.
 * Null on decisions stored before channels were kept.
 */
export type DecisionChannel = "link" | "shared" | "api" | "slack";

export interface ApprovalDecisionRow {
  approver: string;
  decision: "approve" | "reject";
  comment: string | null;
  decidedAt: number;
  channel: DecisionChannel | null;
  /** A name the holder of a shared link typed: a claim, never identity. */
  claimedBy: string | null;
  /** The API key a decision through the API was made with, and the user it named. */
  keyId: string | null;
  userId: string | null;
  /** The request's address and user agent, for the audit. */
  address: string | null;
  userAgent: string | null;
}

/*
 * What a wait does, decided from its rows alone; each store reads and writes the rows, in its
 * own transaction, around these.
 */

/** What registering a wait stores besides its job or signal subscription. */
export interface WaitSetup {
  deadline: number | null;
  /** The step's `config`: the callback's verify source, the approval, or the signal match. */
  config: unknown;
  /** The data of its `step.waiting` event. */
  event: Record<string, unknown>;
  /** Its timers, in the order they are queued: an approval's reminders, then the deadline. */
  timers: NewWorkItem[];
}

/** `jobId`: the id given to the job of a `job` wait, null for the other kinds. */
export function waitSetup(
  w: WaitRequest,
  tenantId: string,
  taskId: string,
  now: number,
  jobId: string | null,
): WaitSetup {
  const deadline = w.timeoutMs === null ? null : now + w.timeoutMs;
  let config: unknown = null;
  const timers: NewWorkItem[] = [];
  const event: Record<string, unknown> = { step_id: w.stepId, kind: w.kind };
  if (deadline !== null) event.deadline = new Date(deadline).toISOString();
  switch (w.kind) {
    case "job":
      Object.assign(event, { job_id: jobId, provider: w.provider });
      break;
    case "callback":
      config = { verify_source: w.verifySource };
      break;
    case "approval":
      config = w.approval;
      if (w.approval.remindAfterMs !== null) {
        timers.push(
          timer("reminder", tenantId, taskId, w.stepId, now + w.approval.remindAfterMs, "reminder"),
        );
      }
      if (w.approval.escalateAfterMs !== null) {
        timers.push(
          timer("reminder", tenantId, taskId, w.stepId, now + w.approval.escalateAfterMs, "escalation"),
        );
      }
      Object.assign(event, {
        approvers: w.approval.approvers,
        quorum: w.approval.quorum,
        title: w.approval.title,
      });
      break;
    case "wait_event":
      config = w.match;
      event.event = w.match.event;
      break;
    case "sleep":
      break;
  }
  if (deadline !== null) timers.push(timer("timeout", tenantId, taskId, w.stepId, deadline));
  return { deadline, config, event, timers };
}

/** Why a wait cannot take an answer now, or null if it can. */
export function refusal(
  task: TaskRow | null,
  step: StepRow | null,
  attempt: number,
  nowMs: number,
): Exclude<WaitAnswer, "accepted"> | null {
  if (!task || !step) return "not_found";
  if (task.status === "canceled") return "canceled";
  if (step.status === "timed_out" || step.status === "canceled") return "expired";
  if (step.status !== "waiting" || step.attempts !== attempt) return "already_used";
  if (step.deadlineAt !== null && nowMs > step.deadlineAt) return "expired";
  return null;
}

/** The SHA-256 (hex) of a callback's raw body: what a repeated call is compared by. */
export const bodySha256 = (body: Buffer): string => createHash("sha256").update(body).digest("hex");

/**
 * A late callback's body is kept on the step only up to this size, and only the first one:
 * every later or larger one leaves its hash and size alone, so holding an expired link never
 * lets anyone grow the store by a body per call.
 */
export const LATE_BODY_KEPT_BYTES = 64 * 1024;

/**
 * The answer to a callback: `duplicate` when the step already succeeded, for this attempt,
 * with a body of the same SHA-256 (a sender retrying); otherwise why it is refused, or null
 * to accept it. `resultSha256` is the hash stored with the step's completion.
 */
export function callbackVerdict(
  task: TaskRow | null,
  step: StepRow | null,
  resultSha256: string | null,
  d: CallbackDelivery,
  sha256: string,
  nowMs: number,
): Exclude<CallbackAnswer, "accepted"> | null {
  if (
    task &&
    step &&
    step.kind === "callback" &&
    step.status === "succeeded" &&
    step.attempts === d.attempt &&
    resultSha256 === sha256
  ) {
    return "duplicate";
  }
  return refusal(task, step, d.attempt, nowMs);
}

/** The step's `late_output` for the first late call: its hash and size, and its result if small. */
export function lateResult(d: CallbackDelivery, sha256: string, nowMs: number): Record<string, unknown> {
  return {
    ...(d.body.length <= LATE_BODY_KEPT_BYTES ? { output: d.output } : {}),
    sha256,
    size: d.body.length,
    received_at: new Date(nowMs).toISOString(),
  };
}

/**
 * The inbox row of a callback. An applied one keeps its body (it is the step's result, one
 * per step); a refused one keeps only the hash and size of its body in the note, never the
 * body, so repeated calls to a used or expired link cannot fill the store.
 */
export function callbackInboxRow(
  verdict: Exclude<CallbackAnswer, "accepted"> | null,
  d: CallbackDelivery,
  sha256: string,
): { status: "applied" | "ignored"; body: Buffer; note: string | null } {
  if (verdict === null) return { status: "applied", body: d.body, note: null };
  const why = verdict === "duplicate" ? "duplicate of the applied result" : `refused: ${verdict}`;
  return {
    status: "ignored",
    body: Buffer.alloc(0),
    note: `${why}; body sha256 ${sha256}, ${d.body.length} bytes, not kept`,
  };
}

/** The output an approval ends with once its decisions reach or lose the quorum, else null. */
export function approvalOutput(
  step: StepRow,
  decisions: ApprovalDecisionRow[],
): Record<string, unknown> | null {
  const config = step.config as ApprovalConfig;
  const outcome = approvalOutcome(config, decisions);
  if (!outcome) return null;
  return {
    ...outcome,
    decisions: decisions.map((x) => {
      const who = decidedBy(config, x.approver);
      return {
        approver: who.approver,
        ...(who.claimedBy === null ? {} : { claimed_by: who.claimedBy }),
        decision: x.decision,
        comment: x.comment,
        decidedAt: new Date(x.decidedAt).toISOString(),
      };
    }),
  };
}

/**
 * The data of a `step.decided` event: the decision, and who made it as `decidedBy` tells,
 * with `claimed_by` only for a name the holder of an anonymous link gave.
 */
export function decidedEvent(
  config: Partial<Pick<ApprovalConfig, "approvers">> | null | undefined,
  d: {
    stepId: string;
    approver: string | null;
    claimedBy?: string | null;
    channel?: DecisionChannel;
    decision: "approve" | "reject";
    comment: string | null;
  },
): Record<string, unknown> {
  const who = decidedBy(config, d.approver, d.claimedBy ?? null);
  return {
    step_id: d.stepId,
    approver: who.approver,
    ...(who.claimedBy === null ? {} : { claimed_by: who.claimedBy }),
    ...(d.channel === undefined ? {} : { channel: d.channel }),
    decision: d.decision,
    comment: d.comment,
  };
}

/** The task event a reminder or escalation timer of an approval emits. */
export function reminderEvent(
  step: StepRow,
  type: "reminder" | "escalation",
): { type: "step.reminder" | "step.escalated"; data: Record<string, unknown> } {
  const config = step.config as ApprovalConfig;
  const data: Record<string, unknown> = {
    step_id: step.stepId,
    approvers: config.approvers,
    title: config.title,
  };
  if (type === "escalation") data.escalate_to = config.escalateTo;
  return { type: type === "reminder" ? "step.reminder" : "step.escalated", data };
}

/** How a waiting step ends at its deadline. */
export interface TimeoutEnd {
  status: "succeeded" | "timed_out" | "failed";
  fields: { output?: unknown; error?: ErrorInfo };
}

/**
 * Each kind's timeout policy (ARCHITECTURE §4.4): a sleep or a signal wait succeeds with null, an
 * approval takes its `onTimeout` default if it has one, the others time out. Null for a step
 * that has no deadline to reach. A `job` step's job is timed out by the store beforehand.
 */
export function timeoutEnd(step: StepRow): TimeoutEnd | null {
  const timedOut = (code: ErrorCode, message: string): TimeoutEnd => ({
    status: "timed_out",
    fields: { error: { code, message } },
  });
  switch (step.kind) {
    case "sleep":
    case "wait_event":
      return { status: "succeeded", fields: { output: null } };
    case "approval": {
      const onTimeout = (step.config as ApprovalConfig).onTimeout;
      const policy = approvalOnTimeout(onTimeout);
      if (policy) return { status: "succeeded", fields: { output: policy.output } };
      if (onTimeout === "fail") {
        return {
          status: "failed",
          fields: {
            error: {
              code: "STEP_TIMED_OUT",
              message: `Approval "${step.stepId}" had no decision before its deadline, and its onTimeout is "fail".`,
            },
          },
        };
      }
      return timedOut("STEP_TIMED_OUT", `Approval "${step.stepId}" had no decision before its deadline.`);
    }
    case "callback":
      return timedOut(
        "STEP_TIMED_OUT",
        `Callback "${step.stepId}" was not called before its deadline; a later call is kept as a late result.`,
      );
    case "job":
      return timedOut(
        "JOB_TIMED_OUT",
        `Step "${step.stepId}" waited past its deadline; a result that arrives later is recorded but not applied.`,
      );
    default:
      return null;
  }
}
