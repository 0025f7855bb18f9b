/**
 * One error type with a stable `code`. Codes are promised to users (ARCHITECTURE §6): add new
 * ones, never rename. `httpStatus` is the one table from code to HTTP status. Every code
 * longhaul itself writes anywhere (an HTTP answer, a step, task or delivery error) is here;
 * only codes a provider reports for its own jobs pass through without being listed.
 */
export const errorStatus = {
  BAD_REQUEST: 400,
  INVALID_JSON: 400,
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  SIGNATURE_INVALID: 401,
  SIGNATURE_MISSING: 401,
  TIMESTAMP_OUT_OF_TOLERANCE: 401,
  /** A webhook token that signs no body, seen again with another body: a replay. */
  TOKEN_REPLAYED: 401,
  FORBIDDEN: 403,
  TASK_NOT_FOUND: 404,
  SOURCE_NOT_FOUND: 404,
  EVENT_NOT_FOUND: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  TASK_TYPE_UNKNOWN: 422,
  /** The task type's schema threw, timed out, or answered an output JSON cannot carry. */
  TASK_SCHEMA_FAILED: 422,
  TASK_NOT_CANCELABLE: 409,
  IDEMPOTENCY_CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  URL_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  QUOTA_EXCEEDED: 429,
  BUDGET_EXCEEDED: 429,
  TENANT_NOT_FOUND: 404,
  KEY_NOT_FOUND: 404,
  RATE_LIMITED: 429,
  STEP_ORDER_MISMATCH: 500,
  STEP_ID_DUPLICATE: 500,
  STEP_FAILED: 500,
  JOB_FAILED: 500,
  JOB_TIMED_OUT: 504,
  PROVIDER_UNKNOWN: 500,
  PROVIDER_ERROR: 502,
  TASK_FAILED: 500,
  TASK_CANCELED: 409,
  SCHEMA_TOO_NEW: 500,
  LEASE_LOST: 409,
  TOKEN_USED: 409,
  DECISION_DUPLICATE: 409,
  WAIT_CANCELED: 410,
  STORE_UNAVAILABLE: 503,
  STORAGE_FULL: 503,
  CONFIG_INVALID: 500,
  INTERNAL: 500,
  JWKS_UNAVAILABLE: 503,
  TOKEN_MALFORMED: 401,
  TOKEN_KEY_UNKNOWN: 401,
  TOKEN_INVALID: 401,
  TOKEN_EXPIRED: 410,
  TARGET_FORBIDDEN: 400,
  WEBHOOK_ENDPOINT_NOT_FOUND: 404,
  DELIVERY_NOT_FOUND: 404,
  DELIVERY_NOT_REPLAYABLE: 409,
  TOO_MANY_STREAMS: 429,
  LIMIT_REACHED: 409,
  // Codes below are recorded on steps, tasks or outbound deliveries rather than answered to a
  // request; the status is the one such a failure would have as an HTTP answer.
  /** A step's error: its job was canceled at the provider without an error code of its own. */
  JOB_CANCELED: 409,
  /** A step's error: a callback, approval, sleep or event wait passed its deadline. */
  STEP_TIMED_OUT: 504,
  /** A step's or task's error: task code threw `NonRetriableError`. */
  NON_RETRIABLE: 500,
  /** A step's or task's error: task code threw something other than a longhaul error. */
  TASK_CODE_ERROR: 500,
  /** A delivery's error: its endpoint secret is sealed under a key this node lacks; retried. */
  SECRET_UNREADABLE: 500,
  /** A delivery's error: the endpoint could not be reached (DNS, connect, timeout); retried. */
  CONNECTION_FAILED: 502,
  /** A delivery's error: the endpoint answered 410, so it was disabled. */
  ENDPOINT_GONE: 410,
  /** A delivery's error: the endpoint answered a redirect, which is never followed; retried. */
  REDIRECT_REFUSED: 502,
  /** A delivery's error: the endpoint answered another non-2xx status; retried. */
  HTTP_STATUS: 502,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof errorStatus;

export class LonghaulError extends Error {
  override readonly name: string = "LonghaulError";
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options?.details;
  }

  get httpStatus(): number {
    return errorStatus[this.code];
  }
}

/** How long a client is told to wait (Retry-After) before retrying a write refused for lack of space. */
export const STORAGE_FULL_RETRY_AFTER_S = 5;

/**
 * The error for a write the database could not make because its disk is full. Nothing of the
 * operation was applied, so the client can send it again unchanged; 503 with Retry-After.
 */
export function storageFull(store: string, cause: unknown): LonghaulError {
  const why = cause instanceof Error ? cause.message : String(cause);
  return new LonghaulError(
    "STORAGE_FULL",
    `The ${store} database has no space left to write (${why}); nothing was saved. Retry in a few seconds; an operator must free disk space.`,
    { cause, details: { retry_after_s: STORAGE_FULL_RETRY_AFTER_S } },
  );
}

/** Thrown by task code: fail now, do not retry. */
export class NonRetriableError extends Error {
  override readonly name = "NonRetriableError";
}

/**
 * Thrown by task code: retry after a delay in milliseconds, or not before a given time. A
 * time is kept as given and turned into a delay by the engine, on its injected clock
 * (`delayMs`), so the wait is measured on the same clock as every other deadline.
 */
export class RetryAfterError extends Error {
  override readonly name = "RetryAfterError";
  /** The delay given, in milliseconds; undefined when a time was given. */
  readonly retryAfterMs: number | undefined;
  /** The time given, in milliseconds since the epoch; undefined when a delay was given. */
  readonly retryAt: number | undefined;
  constructor(message: string, retryAfter: number | Date, options?: { cause?: unknown }) {
    super(message, options);
    if (retryAfter instanceof Date) this.retryAt = retryAfter.getTime();
    else this.retryAfterMs = retryAfter;
  }

  /** How long to wait from `nowMs`: the delay given, or the time left until the time given. */
  delayMs(nowMs: number): number {
    if (this.retryAt !== undefined) return Math.max(0, this.retryAt - nowMs);
    return this.retryAfterMs ?? 0;
  }
}

/** The serialisable form of an error, as stored in step and task rows and shown over HTTP. */
export interface ErrorInfo {
  code: string;
  message: string;
  name?: string;
  retriable?: boolean;
}

export function toErrorInfo(err: unknown): ErrorInfo {
  if (err instanceof LonghaulError || err instanceof StepError)
    return { code: err.code, message: err.message, name: err.name };
  if (err instanceof NonRetriableError) return errorInfo("NON_RETRIABLE", err.message, err.name);
  if (err instanceof Error) return errorInfo("TASK_CODE_ERROR", err.message, err.name);
  return errorInfo("TASK_CODE_ERROR", String(err));
}

/** An `ErrorInfo` with one of the table's codes, so a code longhaul writes is always a listed one. */
export function errorInfo(code: ErrorCode, message: string, name?: string): ErrorInfo {
  return name === undefined ? { code, message } : { code, message, name };
}

/** An error that surfaces stored step/job failures back into task code on replay. */
export class StepError extends Error {
  override readonly name = "StepError";
  readonly code: string;
  readonly stepId: string;
  constructor(stepId: string, info: ErrorInfo) {
    super(info.message);
    this.code = info.code;
    this.stepId = stepId;
  }
}
