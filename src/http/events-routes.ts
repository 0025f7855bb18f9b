import { LonghaulError } from "../core/errors.ts";
import type { EventLogStore, TaskStore } from "../store/store.ts";
import { EventsQuery } from "../wire/events.ts";
import type { Api } from "./api.ts";
import type { EventStreams } from "./event-streams.ts";
import { operation } from "./openapi.ts";

/** How long a client that lost the stream waits before reconnecting (the SSE `retry` field). */
const RECONNECT_MS = 1000;

function eventId(value: string | string[] | undefined, field: string): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === "") return null;
  if (!/^\d{1,15}$/.test(v.trim())) {
    throw new LonghaulError("VALIDATION_FAILED", `${field} must be the id of an event this stream sent.`);
  }
  return Number(v.trim());
}

/**
 * `GET /v1/events[?task_id=][&last_event_id=]`: the tenant's task events as Server-Sent
 * Events. `Last-Event-ID` (sent by EventSource on reconnect; it wins over the query) resumes
 * right after that event from the durable log. Without one, a stream of one task starts at
 * its first event and a stream of the whole tenant at the next event to commit.
 */
export function eventsRoutes(app: Api, store: EventLogStore & TaskStore, streams: EventStreams): void {
  const schema = operation("Server-Sent Events of the tenant's task log; Last-Event-ID resumes", {
    querystring: EventsQuery,
    response: {
      200: {
        description: "text/event-stream: each event's data is a TaskEvent, its id the log's seq",
        content: { "text/event-stream": { schema: { type: "string" } } },
      },
    },
  });
  app.get("/v1/events", { schema }, async (req, reply) => {
    const taskId = req.query.task_id ?? null;
    if (taskId !== null) {
      if (!(await store.getTask(req.tenant.id, taskId))) {
        throw new LonghaulError("TASK_NOT_FOUND", `No task ${taskId} for this API key.`);
      }
    }
    const resumeAt =
      eventId(req.headers["last-event-id"], "Last-Event-ID") ??
      eventId(req.query.last_event_id, '"last_event_id"');
    const afterSeq = resumeAt ?? (taskId !== null ? 0 : await store.lastTaskEventSeq(req.tenant.id));

    // No await between the cap check and `open`: concurrent requests cannot both take the last slot.
    streams.admit(req.tenant.id);
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      connection: "keep-alive",
      // Proxies such as nginx would otherwise hold events back in their buffers.
      "x-accel-buffering": "no",
    });
    // An id with no data dispatches nothing but is where a client resumes if it drops before
    // the first event, so events committed while it reconnects are not skipped.
    res.write(`retry: ${RECONNECT_MS}\nid: ${afterSeq}\n\n`);
    streams.open(res, req.tenant.id, taskId, afterSeq);
  });
}
