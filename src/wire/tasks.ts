import { Type } from "typebox";
import { jobStatuses } from "../core/job.ts";
import { stepKinds, stepStatuses } from "../core/step.ts";
import { taskStatuses } from "../core/task.ts";
import { ErrorInfo, Json, Limit, Nullable, Page, Text, Timestamp } from "./common.ts";

export const TaskStatus = Type.Enum([...taskStatuses]);

/** `POST /v1/tasks`. */
export const SubmitBody = Type.Object({
  type: Text(255, "The name of a registered task type"),
  input: Type.Optional(Json),
  client_request_id: Type.Optional(Nullable(Text(255, "Idempotency: the same id returns the same task"))),
  user_id: Type.Optional(Nullable(Text(255))),
  trace_id: Type.Optional(Nullable(Text(255))),
  run_at: Type.Optional(
    Nullable(Text(64, "Start then (ISO 8601 with its offset); a past time runs now; at most a year ahead")),
  ),
  delay: Type.Optional(Nullable(Text(32, 'Start this long after the submit (e.g. "10m"); not with run_at'))),
});

export const SubmitHeaders = Type.Object({
  "idempotency-key": Type.Optional(Text(255, "Same as client_request_id; the body's wins")),
});

export const SubmitResult = Type.Object({
  task_id: Type.String(),
  status: TaskStatus,
  /** False when the same `client_request_id` had already created this task. */
  created: Type.Boolean(),
});

/** `POST /v1/tasks/batch`: tasks submitted all or nothing, in one transaction. */
export const SubmitBatchBody = Type.Object({
  tasks: Type.Array(
    Type.Object({
      type: Text(255, "The name of a registered task type"),
      input: Type.Optional(Json),
      client_request_id: Type.Optional(
        Nullable(Text(255, "Idempotency: an id used before answers that task; unique in the batch")),
      ),
      user_id: Type.Optional(Nullable(Text(255))),
      trace_id: Type.Optional(Nullable(Text(255))),
    }),
    { minItems: 1, maxItems: 1000, description: "1 to 1,000 tasks; the answer keeps their order" },
  ),
});

export const SubmitBatchResult = Type.Object({ tasks: Type.Array(SubmitResult) });

export const TaskListQuery = Type.Object({
  status: Type.Optional(TaskStatus),
  type: Type.Optional(Type.String()),
  user_id: Type.Optional(Type.String()),
  trace_id: Type.Optional(Type.String()),
  created_after: Type.Optional(
    Type.String({
      maxLength: 64,
      description:
        "Created at or after this ISO 8601 time: a date (midnight UTC) or a date-time with its offset",
    }),
  ),
  created_before: Type.Optional(
    Type.String({ maxLength: 64, description: "Created before this ISO 8601 time (same forms)" }),
  ),
  limit: Type.Optional(Limit),
  cursor: Type.Optional(Type.String()),
});

export const TaskSummary = Type.Object({
  task_id: Type.String(),
  type: Type.String(),
  status: TaskStatus,
  input: Json,
  /**
   * A signed, expiring URL (a read token of the task in its query) that serves the input's JSON,
   * given with `input: null` when the input is kept in the blob store and not answered inline
   * (`limits.inline_response_max_bytes`; a list never inlines one).
   */
  input_url: Type.Optional(Type.String()),
  output: Json,
  /** As `input_url`, for the output. */
  output_url: Type.Optional(Type.String()),
  error: Nullable(ErrorInfo),
  client_request_id: Nullable(Type.String()),
  user_id: Nullable(Type.String()),
  trace_id: Nullable(Type.String()),
  /** The task this one re-runs (`POST /v1/tasks/:id/rerun`); null for a task submitted anew. */
  rerun_of: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const ApprovalLink = Type.Object({
  approver: Nullable(Type.String()),
  /** This approver's decision so far (`pending` for the links of an approval without named approvers until it ends). */
  status: Type.Enum(["pending", "approved", "rejected"]),
  /** Takes either decision in its body; its page shows both buttons. */
  approval_url: Type.String(),
  approve_url: Type.String(),
  reject_url: Type.String(),
  /** Once this approver decided: when, as whom (`by`), how (`channel`), and the comment. */
  decided_at: Type.Optional(Timestamp),
  by: Type.Optional(Type.String()),
  channel: Type.Optional(Type.Enum(["link", "shared", "api", "slack"])),
  comment: Type.Optional(Nullable(Type.String())),
});

/**
 * A message an approval owes (src/notify): one per channel and approver, for the request, a
 * reminder or the escalation. `to` is where it goes as far as the stored step tells (an
 * address, the approver, or a configured notifier's name); never a secret.
 */
export const Notification = Type.Object({
  id: Type.String(),
  channel: Type.String(),
  to: Nullable(Type.String()),
  approver: Nullable(Type.String()),
  reason: Type.Enum(["request", "reminder", "escalation"]),
  status: Type.Enum(["pending", "sent", "failed", "dead", "skipped"]),
  attempts: Type.Integer(),
  last_error: Type.Optional(ErrorInfo),
  sent_at: Type.Optional(Timestamp),
});

/**
 * One approver's decision. `approver` is who longhaul knows decided: a named approver, or
 * `anonymous` on an approval without named approvers, whose links name nobody; `claimed_by`
 * is the name such a link's holder typed, never checked.
 */
export const Decision = Type.Object({
  approver: Type.String(),
  claimed_by: Type.Optional(Type.String()),
  decision: Type.Enum(["approve", "reject"]),
  comment: Nullable(Type.String()),
  decided_at: Timestamp,
  /** `link` (a named approver's own link), `shared` (a link naming nobody), `api` (an API key) or `slack` (a button). */
  channel: Type.Optional(Type.Enum(["link", "shared", "api", "slack"])),
  /** The API key a decision through the API was made with, and the user it said acted. */
  key_id: Type.Optional(Type.String()),
  user_id: Type.Optional(Type.String()),
  /** The request's address and user agent; shown to the tenant's key only. */
  address: Type.Optional(Type.String()),
  user_agent: Type.Optional(Type.String()),
});

/** A step of a task; what a waiting step waits for depends on its kind. */
export const Step = Type.Object({
  id: Type.String(),
  kind: Type.Enum([...stepKinds]),
  status: Type.Enum([...stepStatuses]),
  attempts: Type.Integer(),
  output: Json,
  /** As a task's `output_url`, for a step's result kept in the blob store. */
  output_url: Type.Optional(Type.String()),
  error: Nullable(ErrorInfo),
  provider: Type.Optional(Type.String()),
  job_id: Type.Optional(Nullable(Type.String())),
  callback_url: Type.Optional(Type.String()),
  approval_url: Type.Optional(Type.String()),
  approvals: Type.Optional(Type.Array(ApprovalLink)),
  quorum: Type.Optional(Type.Integer()),
  decisions: Type.Optional(Type.Array(Decision)),
  /** An approval's messages: each channel's and approver's request, reminder, escalation. */
  notifications: Type.Optional(Type.Array(Notification)),
  /** What a waiting `wait_event` step matches. */
  match: Type.Optional(Json),
  /** A result that came after the step's deadline: kept, not applied. */
  late_result: Type.Optional(Json),
  deadline: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const JobUsage = Type.Object(
  {
    input_tokens: Type.Optional(Type.Number()),
    output_tokens: Type.Optional(Type.Number()),
    total_tokens: Type.Optional(Type.Number()),
  },
  { additionalProperties: true },
);

export const Job = Type.Object({
  id: Type.String(),
  step_id: Type.String(),
  provider: Type.String(),
  job_id: Nullable(Type.String()),
  status: Type.Enum([...jobStatuses]),
  output: Json,
  error: Nullable(ErrorInfo),
  usage: Nullable(JobUsage),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** A named artifact the task stored with `step.artifact`: `GET /v1/tasks/:id`'s `artifacts`. */
export const Artifact = Type.Object({
  name: Type.String({ description: "1 to 200 characters, no `/`" }),
  url: Type.String({
    description: "Where its bytes are served: `/v1/tasks/:id/artifacts/:name`, absolute under the public URL",
  }),
  content_type: Type.String(),
  size: Type.Integer({ minimum: 0, description: "Bytes" }),
  sha256: Type.String({ description: "Hex SHA-256 of the bytes" }),
});

export const TaskDetail = Type.Object({
  ...TaskSummary.properties,
  steps: Type.Array(Step),
  jobs: Type.Array(Job),
  artifacts: Type.Array(Artifact, { description: "The task's artifacts, in the order they were stored" }),
  reruns: Type.Array(Type.String(), { description: "The tasks that re-run this one, oldest first" }),
});

export const ArtifactParams = Type.Object({ id: Type.String(), name: Type.String({ minLength: 1 }) });

/** `GET /v1/tasks/:id/steps/:step/output`. */
export const StepOutputParams = Type.Object({ id: Type.String(), step: Type.String({ minLength: 1 }) });

export const TaskPage = Page(TaskSummary);

export const CancelResult = Type.Object({ task_id: Type.String(), status: TaskStatus });
