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
