import { LonghaulError, nonRetriable } from "../core/errors.ts";

/*
 * The errors of a task's read of a `{"url": …}` (ARCHITECTURE §4.10). Retried where trying again
 * may help (a connection lost, a 5xx, a stall, a body cut short); final where it cannot (a
 * refused address, a missing object, a file over the cap): `nonRetriable` keeps the code.
 */

/** Shortens a URL for messages: no query string (it may carry a signature), at most 200 characters. */
export function shownUrl(url: URL | string): string {
  const u = typeof url === "string" ? url : `${url.protocol}//${url.host}${url.pathname}`;
  return u.slice(0, 200);
}

export const readFailed = (what: string, message: string, final: boolean, cause?: unknown) => {
  const err = new LonghaulError(
    "URL_READ_FAILED",
    `Reading ${what} failed: ${message}`,
    cause === undefined ? undefined : { cause },
  );
  return final ? nonRetriable(err) : err;
};

export const timedOut = (what: string, ms: number) =>
  readFailed(what, `no bytes for ${Math.round(ms / 100) / 10} s (storage_urls.timeout_s).`, false);

export const tooLarge = (what: string, maxBytes: number) =>
  nonRetriable(
    new LonghaulError(
      "FILE_TOO_LARGE",
      `${what} is larger than the limit of ${maxBytes} bytes (limits.file_max_bytes).`,
      { details: { limit_bytes: maxBytes } },
    ),
  );

export const urlNotAllowed = (message: string) => nonRetriable(new LonghaulError("URL_NOT_ALLOWED", message));

/** Whether an upstream answer with this status may succeed when asked again. */
export const retriableStatus = (status: number) => status >= 500 || status === 408 || status === 429;
