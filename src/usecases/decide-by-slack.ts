import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { type SlackAction, sameStep } from "../notify/slack-action.ts";
import type { WaitStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { approvalClaims } from "./decide-approval.ts";
import { refuseDecision } from "./refuse-wait.ts";

/**
 * Decides an approval from a Slack button click, its signature already verified: as the
 * approver the clicking Slack user is mapped to (`notify.slack.users`, by user id or user
 * name), through the one-click token the button carries. A user mapped to nobody, or a
 * button for another approver, is APPROVER_MISMATCH; a button whose block names another step
 * than its token, VALIDATION_FAILED. Recorded with channel `slack` and the Slack user's id.
 */
export async function decideBySlack(
  d: { waits: WaitStore; keyring: Keyring; clock: Clock; users: Readonly<Record<string, string>> },
  a: { action: SlackAction; address?: string | null; userAgent?: string | null },
): Promise<{ approver: string; decision: "approve" | "reject"; taskId: string; stepId: string }> {
  const { action } = a;
  const claims = approvalClaims(d, action.token);
  if (claims.purpose !== action.decision) {
    throw new LonghaulError("VALIDATION_FAILED", `This button's link can only ${claims.purpose}.`);
  }
  if (!sameStep(action, claims.taskId, claims.stepId)) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `This Slack action names another step than its link (${claims.stepId} of ${claims.taskId}).`,
    );
  }
  const byId = Object.hasOwn(d.users, action.userId) ? d.users[action.userId] : undefined;
  const byName =
    action.userName !== null && Object.hasOwn(d.users, action.userName)
      ? d.users[action.userName]
      : undefined;
  const approver = byId ?? byName;
  if (approver === undefined) {
    throw new LonghaulError(
      "APPROVER_MISMATCH",
      `The Slack user ${action.userId} is mapped to no approver; add them to notify.slack.users.`,
    );
  }
  if (claims.approver !== undefined && claims.approver !== approver) {
    throw new LonghaulError(
      "APPROVER_MISMATCH",
      `This button is ${claims.approver}'s; the Slack user ${action.userId} decides as ${approver}, through their own message.`,
    );
  }
  const answer = await d.waits.decideApproval({
    tenantId: claims.tenantId,
    taskId: claims.taskId,
    stepId: claims.stepId,
    attempt: claims.attempt,
    approver,
    claimedBy: null,
    channel: "slack",
    decision: action.decision,
    comment: null,
    userId: action.userId,
    address: a.address ?? null,
    userAgent: a.userAgent?.slice(0, 500) ?? null,
  });
  if (answer !== "accepted") refuseDecision(answer, claims.stepId);
  return { approver, decision: action.decision, taskId: claims.taskId, stepId: claims.stepId };
}
