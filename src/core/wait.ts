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

/** The outcome of an approval step from the decisions so far, or null while it can still go either way. */
export function approvalOutcome(
  config: ApprovalConfig,
  decisions: { approver: string | null; decision: "approve" | "reject"; comment: string | null }[],
): { approved: boolean; by: string | null; comment: string | null } | null {
  const voters = Math.max(config.approvers.length, 1);
  const approvals = decisions.filter((d) => d.decision === "approve");
  const rejections = decisions.filter((d) => d.decision === "reject");
  if (approvals.length >= config.quorum) {
    const l = approvals.at(-1)!;
    return { approved: true, by: l.approver, comment: l.comment };
  }
  // Reject once the quorum can no longer be reached.
  if (rejections.length > voters - config.quorum) {
    const l = rejections.at(-1)!;
    return { approved: false, by: l.approver, comment: l.comment };
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
