import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { declaredTooLarge, tooLarge, webhookAction, webhookRefused } from "../actions/webhooks.ts";
import type { Clock } from "../core/clock.ts";
import type { Source } from "../ingress/sources.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { InboxStore, WebhookRefusalStore } from "../store/store.ts";
import { errorResponse } from "./error-handler.ts";
import { countHook, type FixedWindows } from "./rate-limits.ts";
import { REQUEST_ID_HEADER, requestIdFor } from "./request-id.ts";

export interface HookIngressDeps {
  store: InboxStore & WebhookRefusalStore;
  sources: ReadonlyMap<string, Source>;
  clock: Clock;
  log: Logger;
  metrics?: Metrics | undefined;
  /** The webhooks' rate limit, shared with the router's route (`hookWindows`); null: none. */
  windows: FixedWindows | null;
  /** True once the server is closing: requests are then left to the router, which answers 503. */
  closing: () => boolean;
}

/** The route pattern this path answers, as the router's metric labels name it. */
const HOOK_ROUTE = "/hooks/:source";
const JSON_TYPE = "application/json; charset=utf-8";
const RECEIVED = '{"received":true,"duplicate":false}';
const DUPLICATE = '{"received":true,"duplicate":true}';

/**
 * `POST /hooks/:source` answered straight from the `node:http` handler, ahead of the router:
 * the path every webhook takes, at a provider's rate. It keeps the route's whole contract (the
 * per-source rate limit and its headers, 413 before and while the body arrives, the same
 * verify-and-record use case, the error shape, the delivery-id log line, the metric) and
 * leaves the framework's per-request work (routing, hooks, parsers, a child logger, reply
 * serialization) to every other route. It gives each request its id as the router does
 * (`X-Request-Id`, answered in the same header and in an error's body, and on every log
 * line), and counts and logs a refusal as the route does (`webhookRefused`). Only a POST
 * to a configured source's plain path is taken here; anything else (another method, an unknown source, a path with `%` or `/` in
 * the source's place, a server closing) goes to the router, whose `POST /hooks/:source` route
 * answers the same way and documents the endpoint.
 */
export function hookIngress(d: HookIngressDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = req.url ?? "";
    if (req.method !== "POST" || !url.startsWith("/hooks/")) return false;
    const query = url.indexOf("?", 7);
    const name = query < 0 ? url.slice(7) : url.slice(7, query);
    if (name === "" || name.includes("/") || name.includes("%")) return false;
    const source = d.sources.get(name);
    if (!source || d.closing()) return false;
    const id = requestIdFor(req.headers[REQUEST_ID_HEADER]);
    res.setHeader(REQUEST_ID_HEADER, id);
    // The router's field name for the id, so a request's lines are found the same way on either path.
    const log = d.log.child({ reqId: id });
    take(d, log, id, name, source, req, res);
    return true;
  };
}

/** One webhook of a configured source: rate limit, size, body, verify and record, answer. */
function take(
  d: HookIngressDeps,
  log: Logger,
  id: string,
  name: string,
  source: Source,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const fail = (err: unknown) => {
    const r = errorResponse(err, id);
    if (r.logAs) log.error({ err }, r.logAs);
    webhookRefused(
      { refusals: d.store, clock: d.clock, metrics: d.metrics, log },
      {
        source: name,
        status: r.status,
        code: r.body.error.code,
        requestId: id,
        remoteAddress: req.socket.remoteAddress ?? null,
      },
    );
    if (r.retryAfter !== undefined) res.setHeader("retry-after", r.retryAfter);
    send(res, r.status, JSON.stringify(r.body));
  };
  if (log.isLevelEnabled("info")) logCompletion(log, req, res);
  const metrics = d.metrics;
  if (metrics) {
    const started = performance.now();
    res.once("finish", () =>
      metrics.httpSeconds.observe(
        { method: "POST", route: HOOK_ROUTE, status: String(res.statusCode) },
        (performance.now() - started) / 1000,
      ),
    );
  }

  if (d.windows) {
    const key = `${name}\u0000${req.socket.remoteAddress ?? ""}`;
    const limited = countHook(d.windows, key, (header, value) => res.setHeader(header, value));
    if (limited) {
      fail(limited);
      return;
    }
  }
  if (declaredTooLarge(source, req.headers["content-length"])) {
    fail(tooLarge(source));
    return;
  }

  const chunks: Buffer[] = [];
  let received = 0;
  let refused = false;
  req.on("data", (chunk: Buffer) => {
    if (refused) return;
    received += chunk.length;
    // A chunked body is cut off as soon as it grows past the limit.
    if (received > source.bodyLimit) {
      refused = true;
      chunks.length = 0;
      fail(tooLarge(source));
      return;
    }
    chunks.push(chunk);
  });
  req.on("end", () => {
    if (refused) return;
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
    webhookAction(
      { inbox: d.store, clock: d.clock, sources: d.sources, metrics: d.metrics, log },
      { source: name, headers: req.headers, body },
    ).then(
      (answer) => send(res, 200, answer.duplicate ? DUPLICATE : RECEIVED),
      (err: unknown) => fail(err),
    );
  });
  // A client gone before its body ended gets no answer; nothing was recorded.
  req.on("error", () => {});
}

/**
 * One "request completed" line for a webhook answered here, carrying what the router's two
 * lines carry: the request (through the same redacting serializer), the status and the time.
 */
function logCompletion(log: Logger, req: IncomingMessage, res: ServerResponse): void {
  const started = performance.now();
  res.once("finish", () => {
    const request = {
      method: req.method,
      url: req.url,
      host: req.headers.host,
      ip: req.socket.remoteAddress,
      socket: req.socket,
    };
    log.info(
      { req: request, res: { statusCode: res.statusCode }, responseTime: performance.now() - started },
      "request completed",
    );
  });
}

function send(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent || res.destroyed) return;
  res.statusCode = status;
  res.setHeader("content-type", JSON_TYPE);
  res.setHeader("content-length", Buffer.byteLength(text));
  res.end(text);
}
