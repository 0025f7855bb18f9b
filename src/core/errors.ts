/**
 * One error type with a stable `code`. Codes are promised to users (ARCHITECTURE §6): add new
 * ones, never rename. `httpStatus` is the one table from code to HTTP status.
 */
export const errorStatus = {
  BAD_REQUEST: 400,
  INVALID_JSON: 400,
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  SIGNATURE_INVALID: 401,
  SIGNATURE_MISSING: 401,
  TIMESTAMP_OUT_OF_TOLERANCE: 401,
  FORBIDDEN: 403,
  TASK_NOT_FOUND: 404,
  SOURCE_NOT_FOUND: 404,
  EVENT_NOT_FOUND: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  TASK_TYPE_UNKNOWN: 422,
  TASK_NOT_CANCELABLE: 409,
  IDEMPOTENCY_CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
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

/** Thrown by task code: fail now, do not retry. */
export class NonRetriableError extends Error {
  override readonly name = "NonRetriableError";
}

/** Thrown by task code: retry, but not before `retryAfterMs`. */
export class RetryAfterError extends Error {
  override readonly name = "RetryAfterError";
  readonly retryAfterMs: number;
  constructor(message: string, retryAfter: number | Date, options?: { cause?: unknown }) {
    super(message, options);
    this.retryAfterMs =
      retryAfter instanceof Date ? Math.max(0, retryAfter.getTime() - Date.now()) : retryAfter;
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
  if (err instanceof NonRetriableError)
    return { code: "NON_RETRIABLE", message: err.message, name: err.name };
  if (err instanceof Error) return { code: "TASK_CODE_ERROR", message: err.message, name: err.name };
  return { code: "TASK_CODE_ERROR", message: String(err) };
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
