import { type ErrorCode, LonghaulError } from "../core/errors.ts";

/**
 * The one table from an error code to its HTTP status (ARCHITECTURE §6): every code of
 * `errorCodes` has a row, or this does not type-check.
 */
export const errorStatus: Readonly<Record<ErrorCode, number>> = {
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
  /** A re-run of a task that is still going or succeeded: only a failed, canceled or timed-out one re-runs. */
  TASK_NOT_RERUNNABLE: 409,
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
  EVENT_SINK_NOT_FOUND: 404,
  DELIVERY_NOT_FOUND: 404,
  DELIVERY_NOT_REPLAYABLE: 409,
  TOO_MANY_STREAMS: 429,
  LIMIT_REACHED: 409,
  /** A read token used on a route, task or stream it does not open, or a capability token where a read token is meant. */
  TOKEN_SCOPE: 403,
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
  /** A blob key outside the charset, with `..`, an empty or dot-led segment, or too long. */
  BLOB_KEY_INVALID: 400,
  BLOB_NOT_FOUND: 404,
  /** The blob store (a directory or an S3-compatible bucket) could not be reached; nothing changed. */
  BLOB_STORE_UNAVAILABLE: 503,
  /** A byte range outside the blob or file. */
  RANGE_NOT_SATISFIABLE: 416,
  /** An upload over `limits.file_max_bytes`; nothing was kept. */
  FILE_TOO_LARGE: 413,
  FILE_NOT_FOUND: 404,
  /** No artifact of that name on the task (or the task is another tenant's). */
  ARTIFACT_NOT_FOUND: 404,
  /** An upload that would take the tenant's files past its storage quota; nothing was kept. */
  STORAGE_QUOTA_EXCEEDED: 413,
  /** A `{"url": …}` in a task input (or read by a task) whose scheme or host is not allowed. */
  URL_NOT_ALLOWED: 400,
  /** A job's error: the provider's result (a batch's result file, say) is not what its API documents. */
  PROVIDER_RESULT_INVALID: 502,
  /** The task's own requester tried to decide its approval, which the step does not allow. */
  SELF_APPROVAL: 403,
  /**
   * A task's read of a `{"url": …}` failed upstream: no connection, a failed answer, too many
   * redirects, a body cut short or longer than its Content-Length, no bytes within the timeout.
   */
  URL_READ_FAILED: 502,
  /** A task read an `s3://` or `gs://` URL, but `storage_urls` gives no credentials for it. */
  URL_READS_NOT_CONFIGURED: 501,
  /** A `step.artifact` over `limits.file_max_bytes`; nothing was kept. */
  ARTIFACT_TOO_LARGE: 413,
  /** The task (of this tenant) has no such value: no output yet, or no step of that id. */
  PAYLOAD_NOT_FOUND: 404,
  /** A value kept in the blob store is missing there, or its bytes do not match the reference's SHA-256. */
  PAYLOAD_UNREADABLE: 500,
  NOTIFICATION_NOT_FOUND: 404,
  NOTIFICATION_NOT_REPLAYABLE: 409,
  /** A message of an approval could not be sent (a mail server's refusal, a chat API's error): on the notification. */
  NOTIFY_FAILED: 502,
  /** A Slack button for one approver clicked by another person, or by a Slack user mapped to nobody. */
  APPROVER_MISMATCH: 403,
  /**
   * An embedder answered vectors of another length than it declares (or another count than it
   * was given texts): nothing of the batch was indexed.
   */
  EMBEDDING_DIMENSION_MISMATCH: 502,
  /** Chunks a task handed to `ctx.index.put` that cannot be stored (an empty text, a duplicate id…); none were. */
  CHUNKS_INVALID: 400,
  /**
   * A document a task was given that it cannot read as its kind says (not a PDF, an encrypted
   * PDF, a damaged one): `details.reason` says which. Final for the step: the same bytes fail again.
   */
  DOCUMENT_UNREADABLE: 422,
};

/** The HTTP status of an error: its code's, or 500 for anything that is not a LonghaulError. */
export function httpStatusOf(err: unknown): number {
  return err instanceof LonghaulError ? errorStatus[err.code] : 500;
}
