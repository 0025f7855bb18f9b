import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { DecisionAnswer, WaitStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { type TokenClaims, verifyToken } from "../tokens/token.ts";
import { refuseDecision } from "./refuse-wait.ts";

/** The claims of an approval link: a one-click approve or reject, or a `decide` link that takes either. */
export type ApprovalClaims = TokenClaims & { purpose: "approve" | "reject" | "decide" };

/** Verifies an approval link's token; a callback URL's token is FORBIDDEN here. */
export function approvalClaims(d: { keyring: Keyring; clock: Clock }, token: string): ApprovalClaims {
  const claims = verifyToken(d.keyring, token, d.clock.now());
  if (claims.purpose === "callback") {
    throw new LonghaulError(
      "FORBIDDEN",
      "This link is a callback URL, not an approval; POST the result to it.",
    );
  }
  return claims as ApprovalClaims;
}

/** The decision a request asks for, checked against what its link allows. */
export function decisionOf(claims: ApprovalClaims, asked: unknown): "approve" | "reject" {
  if (claims.purpose === "decide") {
    if (asked === "approve" || asked === "reject") return asked;
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `decision is ${asked === undefined ? "missing" : (JSON.stringify(asked) ?? String(asked)).slice(0, 60)}; this link takes {"decision": "approve"} or {"decision": "reject"}.`,
    );
  }
  const decision = asked ?? claims.purpose;
  if (decision !== claims.purpose) {
    throw new LonghaulError(
      "FORBIDDEN",
      `This link can only ${claims.purpose}; use the other link to ${String(decision)}.`,
    );
  }
  return claims.purpose;
}

/** Trimmed free text without NUL characters, at most `max` characters; empty is null. */
const text = (v: unknown, max: number): string | null =>
  typeof v === "string" && v.trim().length > 0 ? v.replaceAll("\u0000", "").trim().slice(0, max) : null;

/** Where a decision's request came from, for the audit. */
export interface DecisionOrigin {
  address?: string | null;
  userAgent?: string | null;
}

export interface DecideApprovalInput extends DecisionOrigin {
  claims: ApprovalClaims;
  /** What the request asks for: needed for a `decide` link, optional for a one-click link. */
  decision?: unknown;
  /** A name typed by the holder of a link that names nobody: kept as a claim, never identity. */
  approver?: unknown;
  comment?: unknown;
}

/**
 * Records a decision made through an approval link: the link's purpose decides what it may do;
 * a link naming an approver decides as that approver (a name in the request is ignored), a
 * link naming nobody decides as `anonymous` with the typed name kept as `claimed_by`. The
 * store records it only while the step still waits with the link's attempt, and refuses the
 * task's own requester and shared links the step does not allow (`decisionIdentity`).
 * Returns the store's answer, so a caller can show a refusal on the page (`refuseDecision`
 * gives the API's errors).
 */
export async function decideApproval(
  d: { waits: WaitStore },
  a: DecideApprovalInput,
): Promise<{ decision: "approve" | "reject"; answer: DecisionAnswer }> {
  const { claims } = a;
  const decision = decisionOf(claims, a.decision);
  const linkApprover = claims.approver ?? null;
  const answer = await d.waits.decideApproval({
    tenantId: claims.tenantId,
    taskId: claims.taskId,
    stepId: claims.stepId,
    attempt: claims.attempt,
    approver: linkApprover,
    claimedBy: linkApprover === null ? text(a.approver, 200) : null,
    channel: linkApprover === null ? "shared" : "link",
    decision,
    comment: text(a.comment, 2000),
    address: text(a.address, 200),
    userAgent: text(a.userAgent, 500),
  });
  return { decision, answer };
}

/**
 * Records a decision made through the API with the tenant's key: as the named approver given
 * (one of the step's), or as the key itself; `userId` is who the caller says acted, checked
 * against the task's requester. The step's current attempt is the one decided.
 */
export async function decideApprovalByKey(
  d: { waits: WaitStore },
  a: DecisionOrigin & {
    tenantId: string;
    taskId: string;
    stepId: string;
    keyHash: string | null;
    decision: unknown;
    approver?: unknown;
    userId?: unknown;
    comment?: unknown;
  },
): Promise<"approve" | "reject"> {
  const decision = a.decision;
  if (decision !== "approve" && decision !== "reject") {
    throw new LonghaulError("VALIDATION_FAILED", 'decision must be "approve" or "reject".', {
      param: "decision",
    });
  }
  const found = await d.waits.stepForToken(a.tenantId, a.taskId, a.stepId);
  if (!found) throw new LonghaulError("TASK_NOT_FOUND", `No task ${a.taskId}.`);
  if (found.step.kind !== "approval") {
    throw new LonghaulError("NOT_FOUND", `Task ${a.taskId} has no approval step "${a.stepId}".`);
  }
  const answer = await d.waits.decideApproval({
    tenantId: a.tenantId,
    taskId: a.taskId,
    stepId: a.stepId,
    attempt: found.step.attempts,
    approver: text(a.approver, 200),
    channel: "api",
    decision,
    comment: text(a.comment, 2000),
    keyHash: a.keyHash,
    userId: text(a.userId, 200),
    address: text(a.address, 200),
    userAgent: text(a.userAgent, 500),
  });
  if (answer !== "accepted") refuseDecision(answer, a.stepId);
  return decision;
}
