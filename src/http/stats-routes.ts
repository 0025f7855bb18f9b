import type { Clock } from "../core/clock.ts";
import type { TaskStats as Stats } from "../core/task-stats.ts";
import type { StatsStore } from "../store/store.ts";
import { getTaskStats } from "../usecases/get-task-stats.ts";
import { StatsQuery, TaskStats } from "../wire/stats.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

const iso = (ms: number) => new Date(ms).toISOString();

/** `GET /v1/stats/tasks?window=1h|24h`: the calling tenant's throughput and latency, bucket by bucket. */
export function statsRoutes(app: Api, d: { store: StatsStore; clock: Clock }): void {
  const schema = operation("Tasks submitted and ended per bucket, with p50/p95 durations", {
    querystring: StatsQuery,
    response: { 200: TaskStats },
  });
  app.get("/v1/stats/tasks", { schema }, async (req) =>
    statsJson(
      await getTaskStats(
        { stats: d.store, clock: d.clock },
        { tenantId: req.tenant.id, window: req.query.window ?? "1h" },
      ),
    ),
  );
}

function statsJson(s: Stats) {
  return {
    window: s.window,
    from: iso(s.from),
    to: iso(s.to),
    bucket_s: s.bucketMs / 1000,
    buckets: s.buckets.map((b) => ({
      start: iso(b.start),
      submitted: b.submitted,
      succeeded: b.succeeded,
      failed: b.failed,
      timed_out: b.timedOut,
      canceled: b.canceled,
      p50_ms: b.p50Ms,
      p95_ms: b.p95Ms,
    })),
    p50_ms: s.p50Ms,
    p95_ms: s.p95Ms,
    complete_from: iso(s.completeFrom),
  };
}
