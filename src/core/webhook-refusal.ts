/**
 * A webhook refused before anything of it was recorded: a bad or missing signature, a
 * timestamp out of tolerance, a replayed token, a body too large or not JSON. What is kept is
 * who sent it and why it was refused, never its body, headers, signature or secret.
 *
 * Refusals are counted per source, reason code and minute (`refusalMinute`): one row per
 * bucket, its `count` raised by each refusal in it, so a flood of forged deliveries grows a
 * number instead of a table. The bucket keeps the first and last time, and the last request
 * id and remote address, so an operator can find the request in the logs.
 */
export interface WebhookRefusal {
  source: string;
  /** The error code the sender was answered with (`SIGNATURE_INVALID`, …). */
  code: string;
  at: number;
  requestId: string;
  remoteAddress: string | null;
}

/** One source's refusals of one reason code in one minute. */
export interface WebhookRefusalRow {
  /** A ULID given when the bucket's first refusal came: newest buckets sort first. */
  id: string;
  source: string;
  code: string;
  /** The start of the bucket's minute, ms since the epoch. */
  minute: number;
  count: number;
  firstAt: number;
  lastAt: number;
  lastRequestId: string;
  lastRemoteAddress: string | null;
}

/** The length of one refusal bucket. */
export const REFUSAL_BUCKET_MS = 60_000;

/** Refusal buckets are pruned by the maintenance pass after this long (7 days). */
export const REFUSAL_RETENTION_MS = 7 * 86_400_000;

/** The start of the minute a refusal at `at` is counted in. */
export function refusalMinute(at: number): number {
  return at - (at % REFUSAL_BUCKET_MS);
}

/**
 * Whether a webhook answered with this status and code is a refusal to record. Rate-limited
 * deliveries are not: they are the flood itself, counted by the `RATE_LIMITED` metric only,
 * and recording each would turn the limit into a write per request. Server faults (5xx) are
 * not refusals of the sender's request.
 */
export function isRecordedRefusal(status: number, code: string): boolean {
  return status >= 400 && status < 500 && code !== "RATE_LIMITED";
}
