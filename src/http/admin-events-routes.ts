import { type Static, Type } from "typebox";
import type { InboxEventRow, InboxStore, WebhookRefusalRow, WebhookRefusalStore } from "../store/store.ts";
import { IdParams, Page } from "../wire/common.ts";
import { InboxEvent, InboxQuery, InboxStatus, WebhookRefusal, WebhookRefusalQuery } from "../wire/events.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

const MAX_BODY_SHOWN = 64 * 1024;

function inboxJson(e: InboxEventRow): Static<typeof InboxEvent> {
  const text = e.body.toString("utf8");
  return {
    id: e.id,
    source: e.source,
    provider: e.provider,
    event_id: e.eventId,
    type: e.type,
    job_id: e.jobExternalId,
    status: e.status,
    note: e.note,
    received_at: new Date(e.receivedAt).toISOString(),
    body: text.length > MAX_BODY_SHOWN ? `${text.slice(0, MAX_BODY_SHOWN)}…` : text,
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

function refusalJson(r: WebhookRefusalRow): Static<typeof WebhookRefusal> {
  return {
    id: r.id,
    source: r.source,
    code: r.code,
    minute: iso(r.minute),
    count: r.count,
    first_at: iso(r.firstAt),
    last_at: iso(r.lastAt),
    last_request_id: r.lastRequestId,
    last_remote_address: r.lastRemoteAddress,
  };
}

/** The inbox for operators: what came in, what happened to it, and replay; what was refused. */
export function adminEventsRoutes(app: Api, store: InboxStore & WebhookRefusalStore): void {
  const refusals = operation("Refused webhooks, counted per source, reason code and minute", {
    querystring: WebhookRefusalQuery,
    response: { 200: Page(WebhookRefusal) },
  });
  app.get("/v1/admin/webhook-refusals", { schema: refusals }, async (req) => {
    const { source, cursor, limit } = req.query;
    const page = await store.listWebhookRefusals({ source, limit: limit ?? 50, cursor });
    return { data: page.refusals.map(refusalJson), next_cursor: page.nextCursor };
  });

  const list = operation("The inbox of deliveries (source, status)", {
    querystring: InboxQuery,
    response: { 200: Page(InboxEvent) },
  });
  app.get("/v1/admin/events", { schema: list }, async (req) => {
    const { source, status, cursor, limit } = req.query;
    const page = await store.listInbox({ source, status, limit: limit ?? 50, cursor });
    return { data: page.events.map(inboxJson), next_cursor: page.nextCursor };
  });

  const replay = operation("Apply an inbox event again", {
    params: IdParams,
    response: { 202: Type.Object({ id: Type.String(), status: InboxStatus }) },
  });
  app.post("/v1/admin/events/:id/replay", { schema: replay }, async (req, reply) => {
    const e = await store.replayInboxEvent(req.params.id);
    return reply.status(202).send({ id: e.id, status: e.status });
  });
}
