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

export type OnTimeout = "reject" | "approve" | { default: unknown };

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

/** The outcome of an approval step from the decisions so far, or null while it can still go either way. */
export function approvalOutcome(
  config: ApprovalConfig,
  decisions: { approver: string | null; decision: "approve" | "reject"; comment: string | null }[],
): { approved: boolean; by: string | null; comment: string | null } | null {
  const approvals = decisions.filter((d) => d.decision === "approve");
  const rejections = decisions.filter((d) => d.decision === "reject");
  const lastApproval = approvals.at(-1);
  if (lastApproval && approvals.length >= config.quorum) {
    return { approved: true, by: lastApproval.approver, comment: lastApproval.comment };
  }
  // Reject once the quorum can no longer be reached. Without named approvers (quorum 1 only,
  // checked at submit) anyone with the link decides, so the first rejection decides.
  const voters = config.approvers.length;
  const lastRejection = rejections.at(-1);
  if (lastRejection && (voters === 0 || rejections.length > voters - config.quorum)) {
    return { approved: false, by: lastRejection.approver, comment: lastRejection.comment };
  }
  return null;
}

/** What an approval resolves to when its deadline passes, or null to time the step out. */
export function approvalOnTimeout(onTimeout: OnTimeout | null): { output: unknown } | null {
  if (onTimeout === null) return null;
  if (onTimeout === "reject")
    return { output: { approved: false, by: null, comment: "no decision before the deadline" } };
  if (onTimeout === "approve")
    return { output: { approved: true, by: null, comment: "approved by default at the deadline" } };
  return { output: onTimeout.default };
}
