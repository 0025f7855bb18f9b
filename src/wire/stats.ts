import { Type } from "typebox";
import { statsWindowNames } from "../core/task-stats.ts";
import { Nullable, Timestamp } from "./common.ts";

export const StatsQuery = Type.Object({
  window: Type.Optional(Type.Enum([...statsWindowNames], { description: "1h (default) or 24h" })),
});

const Ms = Nullable(Type.Integer({ description: "Milliseconds from submit to end; null when none ended" }));

/** One bucket: tasks submitted in it, tasks that ended in it by how, and their durations. */
export const StatsBucket = Type.Object({
  start: Timestamp,
  submitted: Type.Integer(),
  succeeded: Type.Integer(),
  failed: Type.Integer(),
  timed_out: Type.Integer(),
  canceled: Type.Integer(),
  /** Of the tasks that succeeded, failed or timed out in the bucket. */
  p50_ms: Ms,
  p95_ms: Ms,
});

/** `GET /v1/stats/tasks`. */
export const TaskStats = Type.Object({
  window: Type.Enum([...statsWindowNames]),
  from: Timestamp,
  to: Timestamp,
  bucket_s: Type.Integer(),
  buckets: Type.Array(StatsBucket),
  p50_ms: Ms,
  p95_ms: Ms,
  /** The counts are whole from this time; later than `from` only when the window held more tasks than one request reads. */
  complete_from: Timestamp,
});
