import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { WaitAnswer, WaitStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { type TokenClaims, verifyToken } from "../tokens/token.ts";

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

export interface DecideApprovalInput {
  claims: ApprovalClaims;
  /** What the request asks for: needed for a `decide` link, optional for a one-click link. */
  decision?: unknown;
  /** Taken only when the link names no approver of its own. */
  approver?: unknown;
  comment?: unknown;
}

/**
 * Records an approval decision: the link's purpose decides what it may do, the link's approver
 * wins over one the request names, and the store records it only while the step still waits
 * with the link's attempt. Returns the store's answer, so a caller can show a refusal on the
 * page (see `refuseWait` for the API's errors).
 */
export async function decideApproval(
  d: { waits: WaitStore },
  a: DecideApprovalInput,
): Promise<{ decision: "approve" | "reject"; answer: WaitAnswer }> {
  const { claims } = a;
  const decision = decisionOf(claims, a.decision);
  const answer = await d.waits.decideApproval({
    tenantId: claims.tenantId,
    taskId: claims.taskId,
    stepId: claims.stepId,
    attempt: claims.attempt,
    approver: claims.approver ?? text(a.approver, 200),
    decision,
    comment: text(a.comment, 2000),
  });
  return { decision, answer };
}
