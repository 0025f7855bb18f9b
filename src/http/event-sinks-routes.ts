import { type Static, Type } from "typebox";
import { iso } from "../actions/serialize.ts";
import { LonghaulError } from "../core/errors.ts";
import type { SinkKind } from "../core/sink-kind.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import type { OutboundStore, WebhookEndpointRow } from "../store/store.ts";
import { createEventSink } from "../usecases/create-event-sink.ts";
import { IdParams, NoContent, Page } from "../wire/common.ts";
import {
  DeliveriesQuery,
  DeliveryParams,
  EventSink,
  EventSinkBody,
  WebhookDelivery,
} from "../wire/outbound.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";
import { deliveryJson } from "./webhook-endpoints-routes.ts";

/** The field that names a kind's target. */
const targetField = { nats: "subject", rabbitmq: "exchange", redis: "stream" } as const satisfies Record<
  SinkKind,
  string
>;

export const sinkJson = (e: WebhookEndpointRow): Static<typeof EventSink> => {
  const kind = e.kind as SinkKind;
  return {
    id: e.id,
    kind,
    url: e.url,
    subject: kind === "nats" ? e.target : null,
    exchange: kind === "rabbitmq" ? e.target : null,
    stream: kind === "redis" ? e.target : null,
    events: e.events,
    status: e.status,
    disabled_reason: e.disabledReason,
    created_at: iso(e.createdAt),
    updated_at: iso(e.updatedAt),
  };
};

const notFound = (id: string) =>
  new LonghaulError("EVENT_SINK_NOT_FOUND", `No event sink ${id} for this API key.`);

/**
 * `/v1/sinks`: the tenant's message-broker targets (ARCHITECTURE §4.7). They are
 * outbound endpoints of another kind, so their deliveries are the webhook deliveries' outbox
 * rows; these routes see only sinks, and the webhook routes never see them. Every lookup is
 * scoped by the caller's tenant: another tenant's ids are 404 (ARCHITECTURE §3.6).
 */
export function eventSinksRoutes(
  app: Api,
  store: OutboundStore,
  settings: OutboundSettings,
  /** `limits.webhook_endpoints_per_tenant`, shared with webhook endpoints; 0: no cap. */
  maxPerTenant = 0,
): void {
  const created = operation("Add an event sink: task events are published to a broker", {
    body: EventSinkBody,
    response: { 201: EventSink },
  });
  app.post("/v1/sinks", { schema: created }, async (req, reply) => {
    const b = req.body;
    const field = targetField[b.kind];
    const target = b[field];
    const others = Object.values(targetField).filter((f) => f !== field && b[f] !== undefined);
    if (target === undefined || others.length > 0) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `A ${b.kind} sink takes "${field}"${others.length ? `, not ${others.map((f) => `"${f}"`).join(", ")}` : ""}.`,
      );
    }
    const sink = await createEventSink(
      { outbound: store, settings, maxPerTenant },
      { tenantId: req.tenant.id, kind: b.kind, url: b.url, target, events: b.events },
    );
    return reply.status(201).send(sinkJson(sink));
  });

  const list = operation("Event sinks", {
    response: { 200: Type.Object({ data: Type.Array(EventSink) }) },
  });
  app.get("/v1/sinks", { schema: list }, async (req) => ({
    data: (await store.listWebhookEndpoints(req.tenant.id, "sinks")).map(sinkJson),
  }));

  const one = operation("An event sink", { params: IdParams, response: { 200: EventSink } });
  app.get("/v1/sinks/:id", { schema: one }, async (req) => {
    const e = (await store.listWebhookEndpoints(req.tenant.id, "sinks")).find((x) => x.id === req.params.id);
    if (!e) throw notFound(req.params.id);
    return sinkJson(e);
  });

  const removed = operation("Remove an event sink", { params: IdParams, response: { 204: NoContent } });
  app.delete("/v1/sinks/:id", { schema: removed }, async (req, reply) => {
    if (!(await store.deleteWebhookEndpoint(req.tenant.id, req.params.id, "sinks"))) {
      throw notFound(req.params.id);
    }
    return reply.status(204).send(null);
  });

  const deliveries = operation("The sink's delivery log", {
    params: IdParams,
    querystring: DeliveriesQuery,
    response: { 200: Page(WebhookDelivery) },
  });
  app.get("/v1/sinks/:id/deliveries", { schema: deliveries }, async (req) => {
    const q = req.query;
    const page = await store.listWebhookDeliveries(
      req.tenant.id,
      req.params.id,
      { limit: q.limit ?? 50, cursor: q.cursor, state: q.state },
      "sinks",
    );
    if (!page) throw notFound(req.params.id);
    return { data: page.deliveries.map(deliveryJson), next_cursor: page.nextCursor };
  });

  const replay = operation("Queue a dead or failed sink delivery again", {
    params: DeliveryParams,
    response: { 202: WebhookDelivery },
  });
  app.post("/v1/sinks/:id/deliveries/:delivery_id/replay", { schema: replay }, async (req, reply) => {
    const d = await store.replayWebhookDelivery(
      req.tenant.id,
      req.params.id,
      req.params.delivery_id,
      "sinks",
    );
    return reply.status(202).send(deliveryJson(d));
  });
}
