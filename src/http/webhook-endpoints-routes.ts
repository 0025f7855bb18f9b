import { type Static, Type } from "typebox";
import { iso } from "../actions/serialize.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import type { OutboundStore, WebhookDeliveryRow, WebhookEndpointRow } from "../store/store.ts";
import { createWebhookEndpoint } from "../usecases/create-webhook-endpoint.ts";
import { endpointNotFound, rotateWebhookSecret } from "../usecases/rotate-webhook-secret.ts";
import { IdParams, NoContent, Page } from "../wire/common.ts";
import {
  DeliveriesQuery,
  DeliveryParams,
  EndpointBody,
  RotateSecretBody,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
} from "../wire/outbound.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

export const endpointJson = (e: WebhookEndpointRow): Static<typeof WebhookEndpoint> => ({
  id: e.id,
  url: e.url,
  events: e.events,
  status: e.status,
  disabled_reason: e.disabledReason,
  previous_secret_expires_at: iso(e.previousSecretExpiresAt),
  created_at: iso(e.createdAt),
  updated_at: iso(e.updatedAt),
});

export const deliveryJson = (d: WebhookDeliveryRow): Static<typeof WebhookDelivery> => ({
  id: d.id,
  endpoint_id: d.endpointId,
  event: { seq: d.eventSeq, type: d.eventType, task_id: d.taskId },
  state: d.state,
  attempts: d.attempts,
  last_status: d.lastStatus,
  last_error: d.lastError,
  next_attempt_at: iso(d.nextAttemptAt),
  delivered_at: iso(d.deliveredAt),
  created_at: iso(d.createdAt),
  updated_at: iso(d.updatedAt),
});

/**
 * `/v1/webhook-endpoints`: the tenant's outbound webhook endpoints and their delivery logs
 * (ARCHITECTURE §4.7). Every lookup is scoped by the caller's tenant: another tenant's ids are 404
 * (ARCHITECTURE §3.6).
 */
export function webhookEndpointsRoutes(
  app: Api,
  store: OutboundStore,
  settings: OutboundSettings,
  /** `limits.webhook_endpoints_per_tenant`; 0: no cap. */
  maxPerTenant = 0,
): void {
  const created = operation("Add an endpoint; its secret is shown once", {
    body: EndpointBody,
    response: { 201: WebhookEndpointWithSecret },
  });
  app.post("/v1/webhook-endpoints", { schema: created }, async (req, reply) => {
    const { endpoint, secret } = await createWebhookEndpoint(
      { outbound: store, settings, maxPerTenant },
      { tenantId: req.tenant.id, url: req.body.url, events: req.body.events },
    );
    return reply.status(201).send({ ...endpointJson(endpoint), secret });
  });

  // A new secret, shown once; the old one keeps signing next to it for the overlap, so
  // receivers can switch without rejecting a delivery.
  const rotated = operation(
    "A new signing secret, shown once; the old one also signs until expire_previous_in_s (default 86400) has passed",
    { params: IdParams, body: RotateSecretBody, response: { 200: WebhookEndpointWithSecret } },
  );
  app.post("/v1/webhook-endpoints/:id/rotate-secret", { schema: rotated }, async (req) => {
    const { endpoint, secret } = await rotateWebhookSecret(
      { outbound: store, settings },
      { tenantId: req.tenant.id, endpointId: req.params.id, overlapS: req.body.expire_previous_in_s },
    );
    return { ...endpointJson(endpoint), secret };
  });

  const list = operation("Outbound webhook endpoints", {
    response: { 200: Type.Object({ data: Type.Array(WebhookEndpoint) }) },
  });
  app.get("/v1/webhook-endpoints", { schema: list }, async (req) => ({
    data: (await store.listWebhookEndpoints(req.tenant.id)).map(endpointJson),
  }));

  const one = operation("An endpoint", { params: IdParams, response: { 200: WebhookEndpoint } });
  app.get("/v1/webhook-endpoints/:id", { schema: one }, async (req) => {
    const e = (await store.listWebhookEndpoints(req.tenant.id)).find((x) => x.id === req.params.id);
    if (!e) throw notFound(req.params.id);
    return endpointJson(e);
  });

  const removed = operation("Remove an endpoint", { params: IdParams, response: { 204: NoContent } });
  app.delete("/v1/webhook-endpoints/:id", { schema: removed }, async (req, reply) => {
    if (!(await store.deleteWebhookEndpoint(req.tenant.id, req.params.id))) throw notFound(req.params.id);
    return reply.status(204).send(null);
  });

  const deliveries = operation("The endpoint's delivery log", {
    params: IdParams,
    querystring: DeliveriesQuery,
    response: { 200: Page(WebhookDelivery) },
  });
  app.get("/v1/webhook-endpoints/:id/deliveries", { schema: deliveries }, async (req) => {
    const q = req.query;
    const page = await store.listWebhookDeliveries(req.tenant.id, req.params.id, {
      limit: q.limit ?? 50,
      cursor: q.cursor,
      state: q.state,
    });
    if (!page) throw notFound(req.params.id);
    return { data: page.deliveries.map(deliveryJson), next_cursor: page.nextCursor };
  });

  const replay = operation("Queue a dead or failed delivery again", {
    params: DeliveryParams,
    response: { 202: WebhookDelivery },
  });
  app.post(
    "/v1/webhook-endpoints/:id/deliveries/:delivery_id/replay",
    { schema: replay },
    async (req, reply) => {
      const d = await store.replayWebhookDelivery(req.tenant.id, req.params.id, req.params.delivery_id);
      return reply.status(202).send(deliveryJson(d));
    },
  );
}

const notFound = endpointNotFound;
