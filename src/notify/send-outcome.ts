import type { ErrorInfo } from "../core/errors.ts";

/** What one send came to: sent, or why not and whether a later attempt may succeed. */
export type SendOutcome =
  | { ok: true }
  | { ok: false; retry: boolean; error: ErrorInfo; retryAfterMs?: number | null };
