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
}

export interface JsonResponse {
  status: number;
  body: unknown;
}

export type JsonRequest = (
  what: string,
  method: "GET" | "POST",
  path: string,
  init?: { body?: unknown; headers?: Record<string, string> },
) => Promise<JsonResponse>;

/**
 * The one HTTP path of the REST adapters. `what` completes "could not …" in error messages.
 * A network failure, a timeout, a 5xx, a 408 or a 429 is a retriable `ProviderError`; any
 * other non-2xx is not. A 2xx body that is not JSON reads as `undefined`.
 */
export function jsonClient(options: JsonClientOptions): JsonRequest {
  const base = options.baseUrl.replace(/\/+$/, "");
  const fetchImpl = options.fetchImpl ?? fetch;
  const { name, timeoutMs } = options;

  return async (what, method, path, init = {}) => {
    let status: number;
    let text: string;
    try {
      const res = await fetchImpl(`${base}${path}`, {
        method,
        headers: {
          accept: "application/json",
          ...(init.body === undefined ? {} : { "content-type": "application/json" }),
          ...options.headers,
          ...init.headers,
        },
        body: init.body === undefined ? null : JSON.stringify(init.body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = res.status;
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
    const retriable = status >= 500 || status === 408 || status === 429;
    throw new ProviderError(
      `${name}: could not ${what}: HTTP ${status}${describeError(body)}; ${
        retriable ? "the request can be retried" : "retrying will not help"
      }.`,
      { retriable, status },
    );
  };
}

/** `{error: {code|status, message}}`, the error body of OpenAI, Google APIs and the simulator. */
function describeError(body: unknown): string {
  const error = isObject(body) ? body.error : undefined;
  if (typeof error === "string") return `: ${error}`;
  if (!isObject(error)) return "";
  const code =
    typeof error.code === "string" ? error.code : typeof error.status === "string" ? error.status : "";
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
