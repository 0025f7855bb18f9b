import { LonghaulError } from "../core/errors.ts";
import type { DecisionAnswer, WaitAnswer } from "../store/store.ts";

/** Turns a refused callback or decision into its error (409 used, 410 expired or canceled). */
export function refuseWait(answer: Exclude<WaitAnswer, "accepted">, stepId: string): never {
  switch (answer) {
    case "already_used":
      throw new LonghaulError(
        "TOKEN_USED",
        `Step "${stepId}" is no longer waiting: this link was already used.`,
      );
    case "duplicate_decision":
      throw new LonghaulError("DECISION_DUPLICATE", `This approver has already decided on step "${stepId}".`);
    case "expired":
      throw new LonghaulError(
        "TOKEN_EXPIRED",
        `Step "${stepId}" passed its deadline, so this call resumes nothing; the step notes it as its late_result.`,
      );
    case "canceled":
      throw new LonghaulError("WAIT_CANCELED", "The task was canceled, so this link no longer works.");
    case "not_found":
      throw new LonghaulError("TASK_NOT_FOUND", "The task of this link no longer exists.");
  }
}

/** Turns a refused decision into its error: a wait's refusal, or who may not decide (403/400). */
export function refuseDecision(answer: Exclude<DecisionAnswer, "accepted">, stepId: string): never {
  switch (answer) {
    case "self_approval":
      throw new LonghaulError(
        "SELF_APPROVAL",
        `The task's requester cannot decide its approval "${stepId}"; the step does not allow self-approval.`,
      );
    case "shared_not_allowed":
      throw new LonghaulError(
        "FORBIDDEN",
        `Approval "${stepId}" has named approvers and allows no shared link; each approver decides through their own link.`,
      );
    case "not_an_approver":
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `approver is not one of the approvers of step "${stepId}".`,
        {
          param: "approver",
        },
      );
    default:
      return refuseWait(answer, stepId);
  }
}
