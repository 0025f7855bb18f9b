import { MAX_DURATION_MS, parseDuration } from "./duration.ts";
import { LonghaulError } from "./errors.ts";

/** When a submitted task is to start: an absolute time or a delay from the submit, as asked. */
export type StartRequest = { runAt: number } | { delayMs: number } | null;

/**
 * Reads a submit's `run_at` (an ISO 8601 time) and `delay` (a duration such as "10m"): at most
 * one of them, each well formed. The bound against the clock is checked where the clock is read
 * (`startAt`), in the same transaction as the write.
 */
export function startRequest(
  runAt: string | null | undefined,
  delay: string | null | undefined,
): StartRequest {
  if (runAt != null && delay != null) {
    throw new LonghaulError("VALIDATION_FAILED", "Give run_at or delay, not both.", { param: "delay" });
  }
  if (runAt != null) {
    // A date-time with its offset: a bare local time would mean a different instant per node.
    const ms = /^\d{4}-\d{2}-\d{2}T.*(Z|[+-]\d{2}:\d{2})$/i.test(runAt) ? Date.parse(runAt) : Number.NaN;
    if (!Number.isFinite(ms)) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `run_at "${runAt.slice(0, 64)}" is not an ISO 8601 date-time with its offset (e.g. 2026-01-01T09:00:00Z).`,
        { param: "run_at" },
      );
    }
    return { runAt: ms };
  }
  if (delay != null) {
    const ms = parseDuration(delay);
    if (ms === null) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `delay "${delay.slice(0, 64)}" is not a duration; use e.g. "30s", "10m", "2h".`,
        {
          param: "delay",
        },
      );
    }
    return { delayMs: ms };
  }
  return null;
}

/**
 * The time a task's first advance is queued for, or undefined for now. A `run_at` in the past
 * runs now; more than a year ahead (MAX_DURATION_MS) is refused, as it is surely a mistake.
 */
export function startAt(now: number, s: StartRequest | undefined): number | undefined {
  if (!s) return undefined;
  const at = "runAt" in s ? s.runAt : now + s.delayMs;
  if (at - now > MAX_DURATION_MS) {
    throw new LonghaulError("VALIDATION_FAILED", "A task may start at most one year after it is submitted.", {
      param: "runAt" in s ? "run_at" : "delay",
    });
  }
  return at > now ? at : undefined;
}
