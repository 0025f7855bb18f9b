import { isObject } from "./brief-event.ts";
import { ProviderError } from "./provider.ts";

export interface JsonClientOptions {
  /** The provider's name, which starts every error message. */
  name: string;
  baseUrl: string;
  /** Sent with every request (authentication, API version). */
  headers?: Record<string, string>;
  fetchImpl?: typeof fetch;
  timeoutMs: number;
  /** The time a `Retry-After` HTTP-date is measured from; default the system clock. */
  now?: () => number;
}

export interface JsonResponse {
  status: number;
  body: unknown;
}

export type JsonRequest = (
  what: string,
  method: "GET" | "POST",
  path: string,
  init?: { body?: unknown; headers?: Record<string, string>; form?: FormData },
) => Promise<JsonResponse>;

/**
 * The one HTTP path of the REST adapters. `what` completes "could not …" in error messages.
 * A network failure, a timeout, a 5xx, a 408 or a 429 is a retriable `ProviderError`; any
 * other non-2xx is not. A 429 is `throttled` (a rate limit: retry later without counting an
 * attempt), except OpenAI's `insufficient_quota`, which is billing: out of credit, it will
 * not pass by waiting, so it is final. A `Retry-After` (seconds or an HTTP-date) becomes the
 * error's `retryAfterMs`. A 2xx body that is not JSON reads as `undefined`.
 */
export function jsonClient(options: JsonClientOptions): JsonRequest {
  const base = options.baseUrl.replace(/\/+$/, "");
  const fetchImpl = options.fetchImpl ?? fetch;
  const { name, timeoutMs } = options;

  return async (what, method, path, init = {}) => {
    let status: number;
    let text: string;
    let retryAfter: string | null = null;
    try {
      const res = await fetchImpl(`${base}${path}`, {
        method,
        headers: {
          accept: "application/json",
          ...(init.body === undefined ? {} : { "content-type": "application/json" }),
          ...options.headers,
          ...init.headers,
        },
        // A form (a file upload) is sent as multipart/form-data, its boundary set by fetch.
        body: init.form ?? (init.body === undefined ? null : JSON.stringify(init.body)),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = res.status;
      retryAfter = res.headers.get("retry-after");
      text = await res.text();
    } catch (cause) {
      throw new ProviderError(
        `${name}: could not ${what}: ${errorText(cause)}; the request can be retried.`,
        {
          retriable: true,
          cause,
        },
      );
    }
    let body: unknown;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (status >= 200 && status < 300) return { status, body };
    throw httpFailure(name, what, status, body, retryAfter, (options.now ?? Date.now)());
  };
}

/**
 * The `ProviderError` of a non-2xx answer: retriable on a 5xx, a 408 or a 429, throttled on a
 * 429 that is not `insufficient_quota`, with the `Retry-After` wait when one was sent.
 */
export function httpFailure(
  name: string,
  what: string,
  status: number,
  body: unknown,
  retryAfter: string | null,
  now: number,
): ProviderError {
  const billing = status === 429 && errorCode(body) === "insufficient_quota";
  const throttled = status === 429 && !billing;
  const retriable = !billing && (status >= 500 || status === 408 || status === 429);
  const retryAfterMs = parseRetryAfter(retryAfter, now);
  return new ProviderError(
    `${name}: could not ${what}: HTTP ${status}${describeError(body)}; ${
      throttled
        ? `rate limited, the request can be retried${retryAfterMs === undefined ? "" : ` after ${Math.ceil(retryAfterMs / 1000)} s`}`
        : retriable
          ? "the request can be retried"
          : billing
            ? "the account is out of credit (billing); retrying will not help"
            : "retrying will not help"
    }.`,
    { retriable, status, throttled, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
  );
}

/**
 * A `Retry-After` header's wait in ms from `now`: delay-seconds, or an HTTP-date (a date
 * passed is 0). Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value == null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The `error.code` (OpenAI) or `error.status` (Google APIs) of an error body, else "". */
function errorCode(body: unknown): string {
  const error = isObject(body) ? body.error : undefined;
  if (!isObject(error)) return "";
  return typeof error.code === "string" ? error.code : typeof error.status === "string" ? error.status : "";
}

/** `{error: {code|status, message}}`, the error body of OpenAI, Google APIs and the simulator. */
function describeError(body: unknown): string {
  const error = isObject(body) ? body.error : undefined;
  if (typeof error === "string") return `: ${error}`;
  if (!isObject(error)) return "";
  const code = errorCode(body);
  const message = typeof error.message === "string" ? `: ${error.message}` : "";
  return `${code === "" ? "" : ` ${code}`}${message}`;
}

export { isObject };

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A path segment from a provider's id: ids are opaque, so they are always encoded. */
export function segment(id: string): string {
  return encodeURIComponent(id);
}
