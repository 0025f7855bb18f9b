import { Type } from "typebox";
import { EVENT_PATTERN, MAX_EVENT_PATTERNS } from "../core/event-filter.ts";
import { SINK_TARGET_PATTERN, sinkKinds } from "../core/sink-kind.ts";
import { ErrorInfo, Limit, Nullable, Timestamp } from "./common.ts";

/** An event type (`task.failed`), a prefix ending in `.*` (`task.*`), or `*` for all. */
const EventPattern = Type.String({ maxLength: 100, pattern: EVENT_PATTERN.source });

export const MAX_WEBHOOK_URL = 2048;

/** `POST /v1/webhook-endpoints`. */
export const EndpointBody = Type.Object({
  url: Type.String({
    minLength: 1,
    maxLength: MAX_WEBHOOK_URL,
    description: "An http(s) URL without credentials",
  }),
  events: Type.Optional(
    Nullable(
      Type.Array(EventPattern, {
        minItems: 1,
        maxItems: MAX_EVENT_PATTERNS,
        description: "Which task events to deliver; leave it out for every event",
      }),
    ),
  ),
});

/** A rotation's overlap: 0 ends every earlier secret at once; at most 30 days. */
export const MAX_OVERLAP_S = 30 * 24 * 3600;

export const RotateSecretBody = Type.Object({
  expire_previous_in_s: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_OVERLAP_S,
      description:
        "How long the old secret also signs, in seconds; default 86400. Earlier secrets still signing keep their own expiry; 0 stops them all at once",
    }),
  ),
});

export const WebhookEndpoint = Type.Object({
  id: Type.String(),
  url: Type.String(),
  events: Nullable(Type.Array(Type.String())),
  status: Type.Enum(["enabled", "disabled"]),
  disabled_reason: Nullable(Type.String()),
  /** Until when a secret replaced by a rotation still signs deliveries (the last of them); null: none does. */
  previous_secret_expires_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** An endpoint just created or rotated, with its signing secret: shown this once. */
export const WebhookEndpointWithSecret = Type.Object({
  ...WebhookEndpoint.properties,
  secret: Type.String(),
});

export const DeliveryState = Type.Enum(["pending", "delivered", "failed", "dead", "canceled"]);

export const WebhookDelivery = Type.Object({
  id: Type.String(),
  endpoint_id: Type.String(),
  event: Type.Object({ seq: Type.Integer(), type: Type.String(), task_id: Type.String() }),
  state: DeliveryState,
  attempts: Type.Integer(),
  last_status: Nullable(Type.Integer()),
  last_error: Nullable(ErrorInfo),
  next_attempt_at: Nullable(Timestamp),
  delivered_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const DeliveriesQuery = Type.Object({
  limit: Type.Optional(Limit),
  state: Type.Optional(DeliveryState),
  cursor: Type.Optional(Type.String()),
});

export const DeliveryParams = Type.Object({ id: Type.String(), delivery_id: Type.String() });

/** `POST /v1/sinks`: exactly one of subject, exchange or stream, as the kind wants. */
export const EventSinkBody = Type.Object({
  kind: Type.Enum([...sinkKinds], {
    description: "The broker: nats (JetStream), rabbitmq or redis (Streams)",
  }),
  url: Type.String({
    minLength: 1,
    maxLength: MAX_WEBHOOK_URL,
    description:
      "The broker URL (nats://, amqp://, amqps://, redis://, rediss://), credentials included; stored sealed, never shown",
  }),
  subject: Type.Optional(
    Type.String({
      pattern: SINK_TARGET_PATTERN.source,
      description: "nats: the subject prefix; each event goes to <subject>.<task_id>",
    }),
  ),
  exchange: Type.Optional(
    Type.String({
      pattern: SINK_TARGET_PATTERN.source,
      description: "rabbitmq: the durable topic exchange; the routing key is the task id",
    }),
  ),
  stream: Type.Optional(
    Type.String({
      pattern: SINK_TARGET_PATTERN.source,
      description: "redis: the stream key events are XADDed to",
    }),
  ),
  events: EndpointBody.properties.events,
});

export const EventSink = Type.Object({
  id: Type.String(),
  kind: Type.Enum([...sinkKinds]),
  /** The broker URL without credentials. */
  url: Type.String(),
  subject: Nullable(Type.String()),
  exchange: Nullable(Type.String()),
  stream: Nullable(Type.String()),
  events: Nullable(Type.Array(Type.String())),
  status: Type.Enum(["enabled", "disabled"]),
  disabled_reason: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
