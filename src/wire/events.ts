import { Type } from "typebox";
import { Json, Limit, Nullable, Text, Timestamp } from "./common.ts";

/** One entry of the tenant's task event log, as `GET /v1/events` streams it (the SSE `data`). */
export const TaskEvent = Type.Object({
  seq: Type.Integer(),
  task_id: Type.String(),
  type: Type.String({
    description:
      "task.created, task.running, task.waiting, task.succeeded, task.failed, task.canceled, task.timed_out, task.log (a line of the task's log: data {level, message, fields, step_position}), step.*, job.*; more may be added",
  }),
  data: Json,
  created_at: Timestamp,
});

export const EventsQuery = Type.Object({
  task_id: Type.Optional(Text(255, "Only this task's events, from its first")),
  last_event_id: Type.Optional(Type.String({ description: "Resume after this event; Last-Event-ID wins" })),
  token: Type.Optional(
    Type.String({ description: "A read token (POST /v1/tokens), for clients that cannot set headers" }),
  ),
});

/** `POST /v1/signals`. */
export const SignalBody = Type.Object({
  name: Text(200, "Matched against waiting steps' event names"),
  data: Type.Optional(Json),
  id: Type.Optional(Text(255, "Makes the signal idempotent")),
});

export const SignalResult = Type.Object({
  signal_id: Type.String(),
  duplicate: Type.Boolean(),
  /** How many waiting steps it ended. */
  matched: Type.Integer(),
});

export const Verdict = Type.Enum([
  "applied",
  "duplicate",
  "late",
  "out_of_order",
  "unmatched",
  "invalid",
  "received",
]);

export const InboxStatus = Type.Enum(["received", "applied", "ignored", "unmatched", "invalid"]);

/** What names an inbox row, in the timeline and the operators' inbox alike. */
const inboxRowFields = {
  source: Type.String(),
  provider: Type.String(),
  event_id: Type.String(),
  type: Nullable(Type.String()),
  job_id: Nullable(Type.String()),
  status: InboxStatus,
};

export const TimelineEvent = Type.Object({
  kind: Type.Literal("event"),
  at: Timestamp,
  seq: Type.Integer(),
  type: Type.String(),
  data: Json,
});

export const TimelineDelivery = Type.Object({
  kind: Type.Literal("delivery"),
  at: Timestamp,
  id: Type.String(),
  origin: Type.Enum(["webhook", "poll"]),
  ...inboxRowFields,
  verdict: Verdict,
  signature: Nullable(Type.Literal("verified")),
  note: Nullable(Type.String()),
});

export const TimelineEntry = Type.Union([TimelineEvent, TimelineDelivery]);

export const Timeline = Type.Object({
  task_id: Type.String(),
  entries: Type.Array(TimelineEntry),
  truncated: Type.Boolean(),
});

/** A delivery in the operators' inbox. */
export const InboxEvent = Type.Object({
  id: Type.String(),
  ...inboxRowFields,
  note: Nullable(Type.String()),
  received_at: Timestamp,
  body: Type.String(),
});

/** A webhook recorded by `POST /hooks/:source`; `duplicate`: the same event had already come. */
export const HookReceipt = Type.Object({ received: Type.Literal(true), duplicate: Type.Boolean() });

/**
 * One source's webhooks refused with one reason in one minute (`GET /v1/admin/webhook-refusals`):
 * who and why, never the body, headers or signature.
 */
export const WebhookRefusal = Type.Object({
  id: Type.String(),
  source: Type.String(),
  code: Type.String({ description: "The error code the sender was answered with (SIGNATURE_INVALID, …)" }),
  minute: Timestamp,
  count: Type.Integer({ description: "Refusals of this source and code in this minute" }),
  first_at: Timestamp,
  last_at: Timestamp,
  last_request_id: Type.String({
    description: "The X-Request-Id of the minute's last refusal, for the logs",
  }),
  last_remote_address: Nullable(Type.String()),
});

/** `GET /v1/admin/webhook-refusals`. */
export const WebhookRefusalQuery = Type.Object({
  source: Type.Optional(Type.String()),
  limit: Type.Optional(Limit),
  cursor: Type.Optional(Type.String()),
});

/** `GET /v1/admin/events`. */
export const InboxQuery = Type.Object({
  source: Type.Optional(Type.String()),
  status: Type.Optional(InboxStatus),
  limit: Type.Optional(Limit),
  cursor: Type.Optional(Type.String()),
});
