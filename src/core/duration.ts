import { LonghaulError } from "./errors.ts";

/** A duration: milliseconds, or a string such as `"500ms"`, `"30s"`, `"5m"`, `"2h"`, `"3d"`. */
export type Duration = number | `${number}${"ms" | "s" | "m" | "h" | "d"}`;

/**
 * The longest duration accepted: one year. Anything longer is a mistake, and past some size a
 * deadline computed from it is not even a valid date.
 */
export const MAX_DURATION_MS = 365 * 86_400_000;

const unitMs = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
// Anchored at both ends and unambiguous (digits, an optional dot and digits, a unit): a failed
// match backtracks over the digits once, so the time is linear in the length of the text.
// Text longer than any sensible duration is not matched at all.
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;
const MAX_DURATION_TEXT = 32;

/** Milliseconds of `d`, with no upper bound; null when `d` is not a duration at all. */
export function parseDuration(d: unknown): number | null {
  if (typeof d === "number") return Number.isFinite(d) && d >= 0 ? d : null;
  if (typeof d !== "string" || d.length > MAX_DURATION_TEXT) return null;
  const m = DURATION.exec(d);
  return m ? Math.round(Number(m[1]) * unitMs[m[2] as keyof typeof unitMs]) : null;
}

/** Milliseconds of `d`. Throws VALIDATION_FAILED for what is not a duration or exceeds MAX_DURATION_MS. */
export function toMs(d: Duration): number {
  const ms = parseDuration(d);
  if (ms === null) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `${show(d)} is not a duration; use milliseconds or e.g. "30s", "5m", "2h".`,
    );
  }
  if (ms > MAX_DURATION_MS) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `${show(d)} is longer than the longest duration allowed, one year (${MAX_DURATION_MS} ms or "365d").`,
    );
  }
  return ms;
}

function show(d: unknown): string {
  const text = typeof d === "string" ? JSON.stringify(d) : String(d);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
