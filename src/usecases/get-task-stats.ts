import type { Clock } from "../core/clock.ts";
import { STATS_MAX_ROWS, statsRange, type TaskStats, taskStats } from "../core/task-stats.ts";
import type { StatsStore } from "../store/store.ts";

/**
 * A tenant's task throughput and latency over the last hour (`1h`, 1-minute buckets) or day
 * (`24h`, 15-minute buckets), ending with the bucket that holds now. An unknown window is
 * VALIDATION_FAILED. Reads at most `STATS_MAX_ROWS` tasks per kind (see `completeFrom`).
 */
export async function getTaskStats(
  d: { stats: StatsStore; clock: Clock },
  q: { tenantId: string; window: string },
): Promise<TaskStats> {
  const range = statsRange(q.window, d.clock.now());
  const rows = await d.stats.taskStatsRows(q.tenantId, range.from, range.to, STATS_MAX_ROWS);
  return taskStats(range, rows);
}
