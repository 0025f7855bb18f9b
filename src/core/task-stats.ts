import { LonghaulError } from "./errors.ts";
import { isTerminalTask, type TaskStatus, taskStatuses } from "./task.ts";

/**
 * Task throughput and latency over a recent window, in fixed buckets (the dashboard's charts).
 * A task counts as submitted in the bucket of its `created_at`, and as ended in the bucket of
 * its end: a terminal task never changes again (ARCHITECTURE §3.3), so its `updated_at` is
 * when it ended and `updated_at - created_at` its duration.
 */
export const statsWindows = {
  "1h": { spanMs: 3_600_000, bucketMs: 60_000 },
  "24h": { spanMs: 86_400_000, bucketMs: 900_000 },
} as const;
export type StatsWindow = keyof typeof statsWindows;
export const statsWindowNames = Object.keys(statsWindows) as StatsWindow[];

/** The states a task ends in, whose end the stats count. */
export const endedTaskStatuses: readonly TaskStatus[] = taskStatuses.filter(isTerminalTask);

/**
 * At most this many tasks are read per window and per kind (submitted, ended): the cost of one
 * stats request is bounded whatever a tenant's volume. Past it, the oldest buckets are left
 * incomplete and the answer says from when its counts are whole (`complete_from`).
 */
export const STATS_MAX_ROWS = 50_000;

export interface EndedTask {
  status: TaskStatus;
  createdAt: number;
  updatedAt: number;
}

/** What the store reads for one window: newest first, each list cut at `STATS_MAX_ROWS`. */
export interface StatsRows {
  /** `created_at` of the tasks submitted in the window. */
  submitted: number[];
  ended: EndedTask[];
}

export interface StatsBucket {
  start: number;
  submitted: number;
  succeeded: number;
  failed: number;
  timedOut: number;
  canceled: number;
  /** Of the tasks that succeeded, failed or timed out in the bucket; null when none did. */
  p50Ms: number | null;
  p95Ms: number | null;
}

export interface TaskStats {
  window: StatsWindow;
  from: number;
  to: number;
  bucketMs: number;
  buckets: StatsBucket[];
  /** Over the whole window. */
  p50Ms: number | null;
  p95Ms: number | null;
  /** The counts are whole from this time on; earlier than `from` unless the row cap was reached. */
  completeFrom: number;
}

/** The window's bounds: it ends at the end of the bucket `now` falls in, so buckets align. */
export function statsRange(window: string, now: number): { window: StatsWindow; from: number; to: number } {
  if (!(window in statsWindows)) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `Unknown stats window "${window}". Use one of: ${statsWindowNames.join(", ")}.`,
    );
  }
  const w = window as StatsWindow;
  const { spanMs, bucketMs } = statsWindows[w];
  const to = (Math.floor(now / bucketMs) + 1) * bucketMs;
  return { window: w, from: to - spanMs, to };
}

/** The `q`-quantile of ascending `sorted` by nearest rank; null for none. */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1]!;
}

/** Counts and durations of the window's tasks, bucket by bucket. */
export function taskStats(
  range: { window: StatsWindow; from: number; to: number },
  rows: StatsRows,
): TaskStats {
  const { bucketMs } = statsWindows[range.window];
  const n = Math.round((range.to - range.from) / bucketMs);
  const buckets: StatsBucket[] = Array.from({ length: n }, (_, i) => ({
    start: range.from + i * bucketMs,
    submitted: 0,
    succeeded: 0,
    failed: 0,
    timedOut: 0,
    canceled: 0,
    p50Ms: null,
    p95Ms: null,
  }));
  const at = (t: number) => buckets[Math.floor((t - range.from) / bucketMs)];
  for (const t of rows.submitted) {
    const b = at(t);
    if (b) b.submitted++;
  }
  const durations: number[][] = buckets.map(() => []);
  for (const e of rows.ended) {
    const i = Math.floor((e.updatedAt - range.from) / bucketMs);
    const b = buckets[i];
    if (!b) continue;
    if (e.status === "succeeded") b.succeeded++;
    else if (e.status === "failed") b.failed++;
    else if (e.status === "timed_out") b.timedOut++;
    else if (e.status === "canceled") b.canceled++;
    // A canceled task's duration says when someone gave up, not how long the work took.
    if (e.status !== "canceled") durations[i]!.push(Math.max(0, e.updatedAt - e.createdAt));
  }
  const all: number[] = [];
  buckets.forEach((b, i) => {
    const d = durations[i]!.sort((x, y) => x - y);
    b.p50Ms = quantile(d, 0.5);
    b.p95Ms = quantile(d, 0.95);
    all.push(...d);
  });
  all.sort((x, y) => x - y);
  // A list cut at the cap (newest first) is whole only from its oldest row on.
  const cut = (times: readonly number[]) =>
    times.length >= STATS_MAX_ROWS ? (times.at(-1) ?? range.from) : range.from;
  return {
    ...range,
    bucketMs,
    buckets,
    p50Ms: quantile(all, 0.5),
    p95Ms: quantile(all, 0.95),
    completeFrom: Math.max(cut(rows.submitted), cut(rows.ended.map((e) => e.updatedAt))),
  };
}
