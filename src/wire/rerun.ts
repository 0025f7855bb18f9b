import { Type } from "typebox";
import { rerunFroms, rerunnableStatuses } from "../core/rerun.ts";
import { Nullable, Text } from "./common.ts";
import { TaskStatus } from "./tasks.ts";

const From = Type.Optional(
  Type.Enum([...rerunFroms], {
    description:
      "failed_step (default): reuse the succeeded steps before the first that did not succeed; start: run every step again",
  }),
);

/** `POST /v1/tasks/:id/rerun`. */
export const RerunBody = Type.Object({
  from: From,
  client_request_id: Type.Optional(Nullable(Text(255, "Idempotency: the same id returns the same re-run"))),
});

export const RerunResult = Type.Object({
  /** The new task. */
  task_id: Type.String(),
  status: TaskStatus,
  /** The task it re-runs. */
  rerun_of: Type.String(),
  /** False when the same `client_request_id` had already made this re-run. */
  created: Type.Boolean(),
  /** How many of the old task's steps the new one reuses instead of running. */
  reused_steps: Type.Integer({ minimum: 0 }),
});

/** `POST /v1/tasks/rerun`. */
export const BulkRerunBody = Type.Object({
  filter: Type.Object({
    status: Type.Optional(Type.Enum([...rerunnableStatuses])),
    type: Type.Optional(Text(255)),
    created_after: Type.Optional(
      Type.String({ maxLength: 64, description: "Created at or after this ISO 8601 time" }),
    ),
    created_before: Type.Optional(
      Type.String({ maxLength: 64, description: "Created before this ISO 8601 time" }),
    ),
  }),
  from: From,
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, description: "At most this many re-runs (20)" }),
  ),
  dry_run: Type.Optional(Type.Boolean({ description: "Only answer which tasks would be re-run" })),
});

export const BulkRerunResult = Type.Object({
  /** The tasks chosen, newest first: re-run, or on a dry run those that would be. */
  matched: Type.Array(Type.String()),
  /** The re-runs made (none on a dry run). */
  data: Type.Array(Type.Object({ task_id: Type.String(), rerun_of: Type.String() })),
  dry_run: Type.Boolean(),
  /** More tasks match than `limit`: ask again for them. */
  more: Type.Boolean(),
});
