import { LonghaulError } from "./errors.ts";

/** A duration: milliseconds, or a string such as `"500ms"`, `"30s"`, `"5m"`, `"2h"`, `"3d"`. */
export type Duration = number | `${number}${"ms" | "s" | "m" | "h" | "d"}`;

const unitMs = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function toMs(d: Duration): number {
  if (typeof d === "number") {
    if (Number.isFinite(d) && d >= 0) return d;
  } else {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(d);
    if (m) return Math.round(Number(m[1]) * unitMs[m[2] as keyof typeof unitMs]);
  }
  throw new LonghaulError(
    "VALIDATION_FAILED",
    `"${String(d)}" is not a duration; use milliseconds or e.g. "30s", "5m", "2h".`,
  );
}
