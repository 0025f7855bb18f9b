import { Type } from "typebox";
import { Nullable } from "./common.ts";

export const TokenParams = Type.Object({ token: Type.String() });

/**
 * A decision, as JSON or from the approval page's form. `decision` is required by an
 * `approval_url`; a one-click link takes only its own. `comment` (2000) and `approver` (200) are
 * trimmed and cut to their length; `null`, like an empty string, means none.
 */
export const DecisionBody = Type.Object({
  decision: Type.Optional(Type.Enum(["approve", "reject"])),
  comment: Type.Optional(Nullable(Type.String({ description: "Optional; null or empty means none" }))),
  approver: Type.Optional(Nullable(Type.String({ description: "Optional; null or empty means none" }))),
});

export const StepParams = Type.Object({ id: Type.String(), step_id: Type.String({ minLength: 1 }) });

/**
 * A decision through the API with the tenant's key. `approver`: one of the step's named
 * approvers the caller decides for; absent, the key itself decides. `user_id`: who the caller
 * says acted, recorded, and refused (`SELF_APPROVAL`) when it is the task's own requester.
 */
export const KeyDecisionBody = Type.Object({
  decision: Type.Enum(["approve", "reject"]),
  approver: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  user_id: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  comment: Type.Optional(Nullable(Type.String())),
});

export const DecisionResult = Type.Object({
  accepted: Type.Literal(true),
  task_id: Type.String(),
  step_id: Type.String(),
  decision: Type.Enum(["approve", "reject"]),
});

export const CallbackResult = Type.Object({
  accepted: Type.Literal(true),
  task_id: Type.String(),
  step_id: Type.String(),
  /** The same body again after it completed the step. */
  duplicate: Type.Optional(Type.Literal(true)),
});
