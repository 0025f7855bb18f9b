import type { FastifyRequest } from "fastify";
import type { Static } from "typebox";
import { LonghaulError } from "../core/errors.ts";
import type { EventLogStore, TaskStore } from "../store/store.ts";
import { taskInScope } from "../usecases/mint-read-token.ts";
import { EventsQuery } from "../wire/events.ts";
import type { Api } from "./api.ts";
import type { EventStreams } from "./event-streams.ts";
import { operation } from "./openapi.ts";
import { sseSink, webSocketSink } from "./stream-sinks.ts";

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

/** Where a stream starts: its task filter and the seq it resumes after. */
async function streamStart(
  req: FastifyRequest,
  query: Static<typeof EventsQuery>,
  store: EventLogStore & TaskStore,
  lastEventId: string | string[] | undefined,
): Promise<{ taskId: string | null; afterSeq: number }> {
  const scope = req.readScope;
  // A task's read token follows its task, named or not; a user's names one of the user's tasks.
  let taskId = query.task_id ?? (scope && "taskId" in scope ? scope.taskId : null);
  if (scope) {
    if (taskId === null) {
      throw new LonghaulError(
        "TOKEN_SCOPE",
        "A user's read token follows one of the user's tasks at a time: add ?task_id=.",
      );
    }
    await taskInScope({ tasks: store }, { tenantId: req.tenant.id, scope, taskId });
  } else if (taskId !== null) {
    if (!(await store.getTask(req.tenant.id, taskId))) {
      throw new LonghaulError("TASK_NOT_FOUND", `No task ${taskId} for this API key.`);
    }
  }
  taskId ??= null;
  const resumeAt = eventId(lastEventId, "Last-Event-ID") ?? eventId(query.last_event_id, '"last_event_id"');
  const afterSeq = resumeAt ?? (taskId !== null ? 0 : await store.lastTaskEventSeq(req.tenant.id));
  return { taskId, afterSeq };
}

/**
 * `GET /v1/events[?task_id=][&last_event_id=]`: the tenant's task events as Server-Sent
 * Events. `Last-Event-ID` (sent by EventSource on reconnect; it wins over the query) resumes
 * right after that event from the durable log. Without one, a stream of one task starts at
 * its first event and a stream of the whole tenant at the next event to commit.
 *
 * `GET /v1/events/ws`: the same events, filters and resume (`?last_event_id=`) over a
 * WebSocket, one TaskEvent JSON text message per event. Both are fed by the one hub
 * (./event-streams.ts) and count against the same `sse_streams_per_tenant`. Both take an API
 * key or a read token (`?token=` for browsers, which cannot set headers on either).
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
  app.get("/v1/events", { schema, config: { readToken: true } }, async (req, reply) => {
    const { taskId, afterSeq } = await streamStart(req, req.query, store, req.headers["last-event-id"]);

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
      // A page on another origin follows with its read token (no cookie is ever read).
      ...(req.readScope ? { "access-control-allow-origin": "*" } : {}),
    });
    // An id with no data dispatches nothing but is where a client resumes if it drops before
    // the first event, so events committed while it reconnects are not skipped.
    res.write(`retry: ${RECONNECT_MS}\nid: ${afterSeq}\n\n`);
    streams.open(sseSink(res), req.tenant.id, taskId, afterSeq);
  });

  const wsSchema = operation("The same events over a WebSocket: one TaskEvent JSON message each", {
    querystring: EventsQuery,
  });
  const starts = new WeakMap<object, { taskId: string | null; afterSeq: number }>();
  app.get(
    "/v1/events/ws",
    {
      schema: wsSchema,
      config: { readToken: true },
      websocket: true,
      // Every refusal is answered before the upgrade, as an HTTP error with its code.
      preHandler: async (req) => {
        const start = await streamStart(req, req.query, store, undefined);
        streams.admit(req.tenant.id);
        starts.set(req, start);
      },
    },
    (ws, req) => {
      const start = starts.get(req)!;
      streams.open(webSocketSink(ws, req.raw.socket), req.tenant.id, start.taskId, start.afterSeq);
    },
  );
}
