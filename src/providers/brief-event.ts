import { LonghaulError } from "../core/errors.ts";
import { isJobEventType, type JobStatus, jobEventTypes } from "../core/job.ts";
import type { JobUsage, ProviderEvent } from "../core/provider-event.ts";
import type { JobSnapshot } from "./provider.ts";

/**
 * The brief's provider event shape (ARCHITECTURE §7):
 * `{"id", "type": "job.created|job.running|job.succeeded|job.failed", "data": {"job_id", "output"?, "error"?, "usage"?}}`.
 * The simulator and plain HTTP services speak it, and the reconciler writes its synthesized
 * events in it, so one parser serves them all.
 */
export function parseBriefEvent(body: unknown, what = "event"): ProviderEvent {
  const invalid = (why: string): never => {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `The ${what} is not in the provider event shape {id, type, data: {job_id}}: ${why}. Check what posts to this source.`,
    );
  };
  if (!isObject(body)) return invalid("the body is not a JSON object");
  const { id, type, data } = body;
  if (typeof id !== "string" || id === "") return invalid("id must be a non-empty string");
  if (typeof type !== "string" || !isJobEventType(type)) {
    return invalid(`type must be one of ${Object.keys(jobEventTypes).join(", ")}`);
  }
  if (!isObject(data) || typeof data.job_id !== "string" || data.job_id === "") {
    return invalid("data.job_id must be a non-empty string");
  }
  const event: ProviderEvent = { eventId: id, type, jobId: data.job_id };
  if (data.output !== undefined) event.output = data.output;
  if (data.error !== undefined) event.error = parseJobError(data.error, invalid);
  if (data.usage !== undefined) event.usage = parseUsage(data.usage, invalid);
  return event;
}

const eventTypeOf: Partial<Record<JobStatus, ProviderEvent["type"]>> = {
  created: "job.created",
  running: "job.running",
  succeeded: "job.succeeded",
  failed: "job.failed",
  canceled: "job.canceled",
};

/** The event a status poll stands for, in the brief's shape, or null for a state no event names. */
export function briefEventFromSnapshot(
  s: JobSnapshot,
): { id: string; type: string; data: Record<string, unknown> } | null {
  const type = eventTypeOf[s.status];
  if (!type) return null;
  const data: Record<string, unknown> = { job_id: s.jobId };
  if (s.output !== undefined) data.output = s.output;
  if (s.error !== undefined) data.error = s.error;
  if (s.usage !== undefined) data.usage = s.usage;
  return { id: `poll:${s.jobId}:${s.status}`, type, data };
}

export function parseJobError(
  value: unknown,
  fail: (why: string) => never,
): { code?: string; message: string } {
  if (!isObject(value) || typeof value.message !== "string") return fail("error must be {code?, message}");
  if (value.code !== undefined && typeof value.code !== "string") return fail("error.code must be a string");
  return value.code === undefined ? { message: value.message } : { code: value.code, message: value.message };
}

export function parseUsage(value: unknown, fail: (why: string) => never): JobUsage {
  if (!isObject(value)) return fail("usage must be an object");
  const usage: JobUsage = {};
  for (const field of ["prompt_tokens", "completion_tokens", "total_tokens"] as const) {
    const n = value[field];
    if (n === undefined) continue;
    if (typeof n !== "number" || !Number.isFinite(n) || n < 0) return fail(`usage.${field} must be a count`);
    usage[field] = n;
  }
  return usage;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
