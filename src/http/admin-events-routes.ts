import type { FastifyInstance } from "fastify";
import { LonghaulError } from "../core/errors.ts";
import type { InboxEventRow, InboxStatus, Store } from "../store/store.ts";

const statuses: InboxStatus[] = ["received", "applied", "ignored", "unmatched", "invalid"];
const MAX_BODY_SHOWN = 64 * 1024;

function inboxJson(e: InboxEventRow) {
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

/** The inbox for operators: what came in, what happened to it, and replay. */
export function adminEventsRoutes(app: FastifyInstance, store: Store): void {
  app.get<{ Querystring: Record<string, string | undefined> }>("/v1/admin/events", async (req) => {
    const { source, status, cursor } = req.query;
    if (status !== undefined && !statuses.includes(status as InboxStatus)) {
      throw new LonghaulError("VALIDATION_FAILED", `"status" must be one of ${statuses.join(", ")}.`);
    }
    const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
      throw new LonghaulError("VALIDATION_FAILED", '"limit" must be a whole number from 1 to 200.');
    }
    const page = await store.listInbox({ source, status: status as InboxStatus | undefined, limit, cursor });
    return { data: page.events.map(inboxJson), next_cursor: page.nextCursor };
  });

  app.post<{ Params: { id: string } }>("/v1/admin/events/:id/replay", async (req, reply) => {
    const e = await store.replayInboxEvent(req.params.id);
    return reply.status(202).send({ id: e.id, status: e.status });
  });
}
