import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { declaredTooLarge, tooLarge, webhookAction } from "../actions/webhooks.ts";
import type { Clock } from "../core/clock.ts";
import type { Source } from "../ingress/sources.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { InboxStore } from "../store/store.ts";
import { errorResponse } from "./error-handler.ts";
import { countHook, type FixedWindows } from "./rate-limits.ts";

export interface HookIngressDeps {
  store: InboxStore;
  sources: ReadonlyMap<string, Source>;
  clock: Clock;
  log: Logger;
  metrics?: Metrics | undefined;
  /** The webhooks' rate limit, shared with the router's route (`hookWindows`); null: none. */
  windows: FixedWindows | null;
  /** True once the server is closing: requests are then left to the router, which answers 503. */
  closing: () => boolean;
}

const JSON_TYPE = "application/json; charset=utf-8";
const RECEIVED = '{"received":true,"duplicate":false}';
const DUPLICATE = '{"received":true,"duplicate":true}';

/**
 * `POST /hooks/:source` answered straight from the `node:http` handler, ahead of the router:
 * the path every webhook takes, at a provider's rate. It keeps the route's whole contract (the
 * per-source rate limit and its headers, 413 before and while the body arrives, the same
 * verify-and-record use case, the error shape, the delivery-id log line, the metric) and
 * leaves the framework's per-request work (routing, hooks, parsers, a child logger, reply
 * serialization) to every other route. Only a POST to a configured source's plain path is
 * taken here; anything else (another method, an unknown source, a path with `%` or `/` in
 * the source's place, a server closing) goes to the router, whose `POST /hooks/:source` route
 * answers the same way and documents the endpoint.
 */
export function hookIngress(d: HookIngressDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const fail = (res: ServerResponse, err: unknown) => {
    const r = errorResponse(err);
    if (r.logAs) d.log.error({ err }, r.logAs);
    if (r.retryAfter !== undefined) res.setHeader("retry-after", r.retryAfter);
    send(res, r.status, JSON.stringify(r.body));
  };

  return (req, res) => {
    const url = req.url ?? "";
    if (req.method !== "POST" || !url.startsWith("/hooks/")) return false;
    const query = url.indexOf("?", 7);
    const name = query < 0 ? url.slice(7) : url.slice(7, query);
    if (name === "" || name.includes("/") || name.includes("%")) return false;
    const source = d.sources.get(name);
    if (!source || d.closing()) return false;
    if (d.log.isLevelEnabled("info")) logCompletion(d.log, req, res);

    if (d.windows) {
      const key = `${name}\u0000${req.socket.remoteAddress ?? ""}`;
      const limited = countHook(d.windows, key, (header, value) => res.setHeader(header, value));
      if (limited) {
        fail(res, limited);
        return true;
      }
    }
    if (declaredTooLarge(source, req.headers["content-length"])) {
      fail(res, tooLarge(source));
      return true;
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
        fail(res, tooLarge(source));
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (refused) return;
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
      webhookAction(
        { inbox: d.store, clock: d.clock, sources: d.sources, metrics: d.metrics, log: d.log },
        { source: name, headers: req.headers, body },
      ).then(
        (answer) => send(res, 200, answer.duplicate ? DUPLICATE : RECEIVED),
        (err: unknown) => fail(res, err),
      );
    });
    // A client gone before its body ended gets no answer; nothing was recorded.
    req.on("error", () => {});
    return true;
  };
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
