import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { UNKNOWN_ADDRESS } from "./rate-limits.ts";

export interface FetchOptions {
  /**
   * The client's address, as the server would see a connection's peer: rate limits per
   * address and the loopback checks use it. Without it, `clientAddress` (below) is asked;
   * unknown, the request is never taken for loopback and is counted against no address
   * (per-tenant limits still apply), so that one client cannot lock out every other.
   */
  remoteAddress?: string;
}

/** Finds a request's client address where the runtime puts it (README "Serverless and edge"). */
export type ClientAddress = (request: Request) => string | null | undefined;

/** A handler of Web-standard requests: `lh.fetch`, and what platform adapters call. */
export type FetchHandler = (request: Request, opts?: FetchOptions) => Promise<Response>;

export interface FetchHandlerOptions {
  /** The client address of a request handed over without `remoteAddress`. */
  clientAddress?: ClientAddress | undefined;
  /** Told once that requests come without an address (per-address limits are then off for them). */
  log?: Pick<Logger, "warn"> | undefined;
}

/** Statuses whose answers carry no body (a `Response` refuses one for them). */
const NO_BODY = new Set([101, 103, 204, 205, 304]);
/** Hop-by-hop headers, which belong to one connection, not to the answer. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding"]);

/**
 * The HTTP server's routes for Web-standard `Request`s (a serverless function, an edge
 * runtime's `fetch` export): the request is injected into the Fastify server with its
 * method, path and query, headers and exact body bytes, so signature checks see what was
 * sent (ARCHITECTURE §4.3), and the answer becomes a `Response` with its status, headers
 * (each value of a repeated header) and body. The body is streamed: `GET /v1/events` works
 * as Server-Sent Events as long as the caller reads it, and canceling the body or aborting
 * the request's signal closes the stream on the server.
 */
export function fetchHandler(server: FastifyInstance, o: FetchHandlerOptions = {}): FetchHandler {
  let warned = false;
  const addressOf = (request: Request, opts: FetchOptions): string => {
    const address = opts.remoteAddress || o.clientAddress?.(request) || null;
    if (address) return address;
    if (!warned) {
      warned = true;
      o.log?.warn(
        "lh.fetch got a request without its client's address: per-address rate limits are off for such requests. Pass { remoteAddress } to lh.fetch or set the clientAddress option (README: Serverless and edge).",
      );
    }
    return UNKNOWN_ADDRESS;
  };
  return async (request, opts = {}) => {
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const body = request.method !== "GET" && request.method !== "HEAD" ? request.body : null;
    // The body goes to the route as a stream, read as the route's parser reads it: a declared
    // Content-Length over the route's limit is refused before a byte is read, and a body with
    // none is cut off once it passes the limit, as over a socket. Without either header the
    // router would take the body for empty.
    if (body && headers["content-length"] === undefined) headers["transfer-encoding"] = "chunked";
    const payload = body ? Readable.fromWeb(body as NodeReadableStream) : undefined;
    let res: Awaited<ReturnType<FastifyInstance["inject"]>>;
    try {
      res = await server.inject({
        method: request.method as "GET",
        url: url.pathname + url.search,
        headers,
        ...(payload ? { payload } : {}),
        remoteAddress: addressOf(request, opts),
        // Resolves once the head is written; the body follows as the route writes it.
        payloadAsStream: true,
      });
    } finally {
      // What the route left unread (refused as too large, or never parsed) is not read at all.
      if (payload && !payload.readableEnded) payload.destroy();
    }
    const raw = res.raw.res;
    const close = () => {
      if (!raw.destroyed) raw.destroy();
    };
    request.signal?.addEventListener("abort", close, { once: true });

    const out = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      if (value === undefined || HOP_BY_HOP.has(name)) continue;
      for (const v of Array.isArray(value) ? value : [value]) out.append(name, String(v));
    }
    const stream = res.stream();
    if (NO_BODY.has(res.statusCode) || request.method === "HEAD") {
      stream.resume();
      return new Response(null, { status: res.statusCode, headers: out });
    }
    const reader = (Readable.toWeb(stream) as ReadableStream<Uint8Array>).getReader();
    // A reader that stops early (a closed SSE client) ends the route's stream too.
    const answer = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (err) {
          controller.error(err);
        }
      },
      cancel(reason) {
        close();
        return reader.cancel(reason);
      },
    });
    return new Response(answer, { status: res.statusCode, headers: out });
  };
}
