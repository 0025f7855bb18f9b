import { brand, isInstance } from "./brand.ts";

/**
 * One error type with a stable `code`. Codes are promised to users (ARCHITECTURE §6): add new
 * ones, never rename. Every code longhaul itself writes anywhere (an HTTP answer, a step, task
 * or delivery error) is here; only codes a provider reports for its own jobs pass through
 * without being listed. What each means over HTTP is the one table in
 * `src/http/error-status.ts`, which the type checker keeps total.
 */
export const errorCodes = [
  "BAD_REQUEST",
  "INVALID_JSON",
  "VALIDATION_FAILED",
  "UNAUTHORIZED",
  "SIGNATURE_INVALID",
  "SIGNATURE_MISSING",
  "TIMESTAMP_OUT_OF_TOLERANCE",
  "TOKEN_REPLAYED",
  "FORBIDDEN",
  "TASK_NOT_FOUND",
  "SOURCE_NOT_FOUND",
  "EVENT_NOT_FOUND",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "TASK_TYPE_UNKNOWN",
  "TASK_SCHEMA_FAILED",
  "TASK_NOT_CANCELABLE",
  "IDEMPOTENCY_CONFLICT",
  "PAYLOAD_TOO_LARGE",
  "URL_TOO_LONG",
  "UNSUPPORTED_MEDIA_TYPE",
  "QUOTA_EXCEEDED",
  "BUDGET_EXCEEDED",
  "TENANT_NOT_FOUND",
  "KEY_NOT_FOUND",
  "RATE_LIMITED",
  "STEP_ORDER_MISMATCH",
  "STEP_ID_DUPLICATE",
  "STEP_FAILED",
  "JOB_FAILED",
  "JOB_TIMED_OUT",
  "PROVIDER_UNKNOWN",
  "PROVIDER_ERROR",
  "TASK_FAILED",
  "TASK_CANCELED",
  "SCHEMA_TOO_NEW",
  "LEASE_LOST",
  "TOKEN_USED",
  "DECISION_DUPLICATE",
  "WAIT_CANCELED",
  "STORE_UNAVAILABLE",
  "STORAGE_FULL",
  "CONFIG_INVALID",
  "INTERNAL",
  "JWKS_UNAVAILABLE",
  "TOKEN_MALFORMED",
  "TOKEN_KEY_UNKNOWN",
  "TOKEN_INVALID",
  "TOKEN_EXPIRED",
  "TARGET_FORBIDDEN",
  "WEBHOOK_ENDPOINT_NOT_FOUND",
  "EVENT_SINK_NOT_FOUND",
  "DELIVERY_NOT_FOUND",
  "DELIVERY_NOT_REPLAYABLE",
  "TOO_MANY_STREAMS",
  "LIMIT_REACHED",
  "TOKEN_SCOPE",
  "JOB_CANCELED",
  "STEP_TIMED_OUT",
  "NON_RETRIABLE",
  "TASK_CODE_ERROR",
  "SECRET_UNREADABLE",
  "CONNECTION_FAILED",
  "ENDPOINT_GONE",
  "REDIRECT_REFUSED",
  "HTTP_STATUS",
  "BLOB_KEY_INVALID",
  "BLOB_NOT_FOUND",
  "BLOB_STORE_UNAVAILABLE",
  "RANGE_NOT_SATISFIABLE",
  "FILE_TOO_LARGE",
  "FILE_NOT_FOUND",
  "ARTIFACT_NOT_FOUND",
  "STORAGE_QUOTA_EXCEEDED",
  "URL_NOT_ALLOWED",
  "PROVIDER_RESULT_INVALID",
  "SELF_APPROVAL",
  "URL_READ_FAILED",
  "URL_READS_NOT_CONFIGURED",
  "ARTIFACT_TOO_LARGE",
  "PAYLOAD_NOT_FOUND",
  "PAYLOAD_UNREADABLE",
  "NOTIFICATION_NOT_FOUND",
  "NOTIFICATION_NOT_REPLAYABLE",
  "NOTIFY_FAILED",
  "APPROVER_MISMATCH",
  "EMBEDDING_DIMENSION_MISMATCH",
  "CHUNKS_INVALID",
  "TASK_NOT_RERUNNABLE",
  "DOCUMENT_UNREADABLE",
] as const;

export type ErrorCode = (typeof errorCodes)[number];

export class LonghaulError extends Error {
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class checked against, maybe a user's subclass
    return isInstance(this, LonghaulError, "longhaul:LonghaulError", value);
  }
  override readonly name: string = "LonghaulError";
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  /** The request field at fault, as a dotted path (`input.text`), when one is; answered as `param`. */
  readonly param: string | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown>; param?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options?.details;
    this.param = options?.param;
    brand(this, "longhaul:LonghaulError");
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

/**
 * Marks a LonghaulError as final for the step that sees it: retrying cannot help (a URL that
 * is refused, a file over the cap), so the step fails at once and keeps the error's own code.
 */
export function nonRetriable<E extends LonghaulError>(err: E): E {
  brand(err, "longhaul:NonRetriableError");
  return err;
}

/** Thrown by task code: fail now, do not retry. */
export class NonRetriableError extends Error {
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class checked against, maybe a user's subclass
    return isInstance(this, NonRetriableError, "longhaul:NonRetriableError", value);
  }
  override readonly name = "NonRetriableError";
  constructor(message?: string, options?: { cause?: unknown }) {
    super(message, options);
    brand(this, "longhaul:NonRetriableError");
  }
}

/**
 * Thrown by task code: retry after a delay in milliseconds, or not before a given time. A
 * time is kept as given and turned into a delay by the engine, on its injected clock
 * (`delayMs`), so the wait is measured on the same clock as every other deadline.
 */
export class RetryAfterError extends Error {
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class checked against, maybe a user's subclass
    return isInstance(this, RetryAfterError, "longhaul:RetryAfterError", value);
  }
  override readonly name = "RetryAfterError";
  /** The delay given, in milliseconds; undefined when a time was given. */
  readonly retryAfterMs: number | undefined;
  /** The time given, in milliseconds since the epoch; undefined when a delay was given. */
  readonly retryAt: number | undefined;
  constructor(message: string, retryAfter: number | Date, options?: { cause?: unknown }) {
    super(message, options);
    brand(this, "longhaul:RetryAfterError");
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
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class checked against, maybe a user's subclass
    return isInstance(this, StepError, "longhaul:StepError", value);
  }
  override readonly name = "StepError";
  readonly code: string;
  readonly stepId: string;
  constructor(stepId: string, info: ErrorInfo) {
    super(info.message);
    brand(this, "longhaul:StepError");
    this.code = info.code;
    this.stepId = stepId;
  }
}
