import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { LonghaulError } from "../core/errors.ts";
import { eventFilterProblem } from "../core/event-filter.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import { vetTarget } from "../outbound/ssrf.ts";
import type { DeliveryState, Store, WebhookDeliveryRow, WebhookEndpointRow } from "../store/store.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const MAX_URL = 2048;
const DEFAULT_OVERLAP_S = 24 * 3600;
const MAX_OVERLAP_S = 30 * 24 * 3600;
const STATES: readonly DeliveryState[] = ["pending", "delivered", "failed", "dead", "canceled"];

export const endpointJson = (e: WebhookEndpointRow) => ({
  id: e.id,
  url: e.url,
  events: e.events,
  status: e.status,
  disabled_reason: e.disabledReason,
  previous_secret_expires_at: iso(e.previousSecretExpiresAt),
  created_at: iso(e.createdAt),
  updated_at: iso(e.updatedAt),
});

export const deliveryJson = (d: WebhookDeliveryRow) => ({
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

/** A new signing secret: `whsec_` and 24 random bytes in base64, shown once. */
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString("base64")}`;

/** Refuses a URL that could never be delivered to: not http(s), credentials, or a forbidden address. */
async function checkUrl(value: unknown, settings: OutboundSettings): Promise<string> {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_URL) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `"url" must be an http(s) URL of at most ${MAX_URL} characters.`,
    );
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new LonghaulError("VALIDATION_FAILED", `"url" is not an absolute URL: ${value.slice(0, 200)}`);
  }
  if (url.username || url.password) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      '"url" must not carry credentials; verify deliveries with the signing secret instead.',
    );
  }
  try {
    await vetTarget(url, settings);
  } catch (err) {
    // A name that does not resolve yet may resolve later; every attempt checks it again.
    if (err instanceof LonghaulError) throw err;
  }
  return url.href;
}

/**
 * `/v1/webhook-endpoints`: the tenant's outbound webhook endpoints and their delivery logs
 * (ARCHITECTURE §4.7). Every lookup is scoped by the caller's tenant: another tenant's ids are 404
 * (ARCHITECTURE §3.6).
 */
export function webhookEndpointsRoutes(
  app: FastifyInstance,
  store: Store,
  settings: OutboundSettings,
  /** `limits.webhook_endpoints_per_tenant`; 0: no cap. */
  maxPerTenant = 0,
): void {
  app.post("/v1/webhook-endpoints", async (req, reply) => {
    const b = req.body as Record<string, unknown> | null;
    if (typeof b !== "object" || b === null || Array.isArray(b)) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        'Send a JSON object such as {"url": "https://example.com/hooks", "events": ["task.*"]}.',
      );
    }
    const url = await checkUrl(b.url, settings);
    let events: string[] | null = null;
    if (b.events !== undefined && b.events !== null) {
      const problem = eventFilterProblem(b.events);
      if (problem) throw new LonghaulError("VALIDATION_FAILED", problem);
      events = [...new Set(b.events as string[])];
    }
    const secret = newWebhookSecret();
    const e = await store.createWebhookEndpoint({
      tenantId: req.tenant.id,
      url,
      events,
      secret: settings.secrets.seal(secret),
      maxPerTenant,
    });
    return reply.status(201).send({ ...endpointJson(e), secret });
  });

  // A new secret, shown once; the old one keeps signing next to it for the overlap, so
  // receivers can switch without rejecting a delivery.
  app.post<{ Params: { id: string } }>("/v1/webhook-endpoints/:id/rotate-secret", async (req) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    if (typeof b !== "object" || b === null || Array.isArray(b)) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        'Send a JSON object such as {"expire_previous_in_s": 3600}, or no body.',
      );
    }
    const overlap = b.expire_previous_in_s ?? DEFAULT_OVERLAP_S;
    if (typeof overlap !== "number" || !Number.isInteger(overlap) || overlap < 0 || overlap > MAX_OVERLAP_S) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `"expire_previous_in_s" must be a whole number of seconds from 0 (the old secret stops at once) to ${MAX_OVERLAP_S} (30 days).`,
      );
    }
    const secret = newWebhookSecret();
    const e = await store.rotateWebhookEndpointSecret(
      req.tenant.id,
      req.params.id,
      settings.secrets.seal(secret),
      overlap === 0 ? null : overlap * 1000,
    );
    if (!e) throw notFound(req.params.id);
    return { ...endpointJson(e), secret };
  });

  app.get("/v1/webhook-endpoints", async (req) => ({
    data: (await store.listWebhookEndpoints(req.tenant.id)).map(endpointJson),
  }));

  app.get<{ Params: { id: string } }>("/v1/webhook-endpoints/:id", async (req) => {
    const e = (await store.listWebhookEndpoints(req.tenant.id)).find((x) => x.id === req.params.id);
    if (!e) throw notFound(req.params.id);
    return endpointJson(e);
  });

  app.delete<{ Params: { id: string } }>("/v1/webhook-endpoints/:id", async (req, reply) => {
    if (!(await store.deleteWebhookEndpoint(req.tenant.id, req.params.id))) throw notFound(req.params.id);
    return reply.status(204).send();
  });

  app.get<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>(
    "/v1/webhook-endpoints/:id/deliveries",
    async (req) => {
      const q = req.query;
      const limit = q.limit === undefined ? 50 : Number(q.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
        throw new LonghaulError("VALIDATION_FAILED", '"limit" must be a whole number from 1 to 200.');
      }
      if (q.state !== undefined && !STATES.includes(q.state as DeliveryState)) {
        throw new LonghaulError("VALIDATION_FAILED", `"state" must be one of ${STATES.join(", ")}.`);
      }
      const page = await store.listWebhookDeliveries(req.tenant.id, req.params.id, {
        limit,
        cursor: q.cursor,
        state: q.state as DeliveryState | undefined,
      });
      if (!page) throw notFound(req.params.id);
      return { data: page.deliveries.map(deliveryJson), next_cursor: page.nextCursor };
    },
  );

  app.post<{ Params: { id: string; delivery_id: string } }>(
    "/v1/webhook-endpoints/:id/deliveries/:delivery_id/replay",
    async (req, reply) => {
      const d = await store.replayWebhookDelivery(req.tenant.id, req.params.id, req.params.delivery_id);
      return reply.status(202).send(deliveryJson(d));
    },
  );
}

const notFound = (id: string) =>
  new LonghaulError("WEBHOOK_ENDPOINT_NOT_FOUND", `No webhook endpoint ${id} for this API key.`);
