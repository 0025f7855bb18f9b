import { type IdGenerator, ulidGenerator } from "../core/ids.ts";

/** The header a request id arrives in and is answered in, on every response. */
export const REQUEST_ID_HEADER = "x-request-id";

/** The longest incoming request id kept; a longer one is replaced. */
export const MAX_REQUEST_ID_LENGTH = 128;

/** Visible ASCII only (no space, no control character): safe in a header and a log line. */
const ACCEPTED = new RegExp(`^[\\x21-\\x7e]{1,${MAX_REQUEST_ID_LENGTH}}$`);

/**
 * The request id of one request: the caller's `X-Request-Id` when it is 1 to 128 visible
 * ASCII characters, else a new ULID (`req_01J…`), unique across nodes without coordination
 * (48 bits of time, 80 random). A repeated header (an array) is replaced too.
 */
export function requestIdFor(incoming: string | string[] | undefined, ids: IdGenerator = defaultIds): string {
  if (typeof incoming === "string" && ACCEPTED.test(incoming)) return incoming;
  return ids.next("req");
}

const defaultIds = ulidGenerator();
