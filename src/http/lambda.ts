import type { FetchHandler } from "./fetch.ts";

/** An API Gateway HTTP API (payload format 2.0) or Lambda function URL event, as far as it is read. */
export interface ApiGatewayV2Event {
  version?: string;
  rawPath: string;
  rawQueryString?: string;
  /** Lower-case names; a repeated header's values joined by commas. */
  headers?: Record<string, string | undefined>;
  /** The `Cookie` header, split. */
  cookies?: string[];
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: {
    domainName?: string;
    http: { method: string; sourceIp?: string };
  };
}

export interface ApiGatewayV2Result {
  statusCode: number;
  headers: Record<string, string>;
  /** `Set-Cookie` values, one each (format 2.0 has no other place for repeated headers). */
  cookies?: string[];
  body: string;
  isBase64Encoded: boolean;
}

export interface LambdaOptions {
  /**
   * API Gateway cannot stream an answer, so `GET /v1/events` is answered with the events
   * committed within this window, then ends; EventSource reconnects with `Last-Event-ID` and
   * loses nothing. Default 5000 ms; keep it under the integration's timeout (30 s).
   */
  eventStreamMs?: number;
}

/** The origin of every request built from an event; only its path and query are read. */
const ORIGIN = "https://lambda.invalid";

const TEXT = /^(text\/|application\/(json|javascript|xml|x-www-form-urlencoded)|[^;]*\+(json|xml))/i;

/**
 * An AWS Lambda handler for API Gateway HTTP APIs (payload format 2.0) and function URLs: the
 * event becomes a `Request` (body bytes as sent: base64 decoded when API Gateway encoded
 * them), `lh.fetch` answers it, and the `Response` becomes the result (repeated headers joined
 * by commas, `Set-Cookie` in `cookies`, a body that is not text in base64). The worker does
 * not run between invocations: schedule a function that calls `lh.drain()`.
 */
export function toLambdaHandler(
  lh: { fetch: FetchHandler },
  opts: LambdaOptions = {},
): (event: ApiGatewayV2Event) => Promise<ApiGatewayV2Result> {
  const streamMs = opts.eventStreamMs ?? 5000;
  return async (event) => {
    const method = event.requestContext.http.method.toUpperCase();
    const headers = new Headers();
    for (const [name, value] of Object.entries(event.headers ?? {})) {
      if (value !== undefined) headers.set(name, value);
    }
    if (event.cookies?.length) headers.set("cookie", event.cookies.join("; "));
    // The path and query as API Gateway routed them, on a fixed origin: a Host header
    // (`h/v1/admin/tenants#`) or a domain name can never rewrite the path. Routes read the
    // Host header itself where they need it.
    const url = new URL(ORIGIN);
    url.pathname = event.rawPath;
    url.search = event.rawQueryString ?? "";
    const body =
      event.body === undefined || method === "GET" || method === "HEAD"
        ? undefined
        : Buffer.from(event.body, event.isBase64Encoded ? "base64" : "utf8");
    const abort = new AbortController();
    const response = await lh.fetch(
      new Request(url, {
        method,
        headers,
        ...(body ? { body: new Uint8Array(body) } : {}),
        signal: abort.signal,
      }),
      event.requestContext.http.sourceIp ? { remoteAddress: event.requestContext.http.sourceIp } : {},
    );
    const type = response.headers.get("content-type") ?? "";
    const bytes = type.startsWith("text/event-stream")
      ? await readFor(response, streamMs, abort)
      : Buffer.from(await response.arrayBuffer());
    const out: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      if (name !== "set-cookie") out[name] = value;
    });
    const cookies = response.headers.getSetCookie();
    const text = type === "" || TEXT.test(type);
    return {
      statusCode: response.status,
      headers: out,
      ...(cookies.length > 0 ? { cookies } : {}),
      body: bytes.toString(text ? "utf8" : "base64"),
      isBase64Encoded: !text,
    };
  };
}

/** What a never-ending body sends within `ms`; then the stream is closed on the server. */
async function readFor(response: Response, ms: number, abort: AbortController): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  const reader = response.body?.getReader();
  if (!reader) return Buffer.alloc(0);
  const timer = setTimeout(() => {
    abort.abort();
    void reader.cancel().catch(() => {});
  }, ms);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
  } catch {
    // Canceled at the window's end: what arrived is the answer.
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks);
}
