/**
 * External job states, ranked so events can only move a job forward (ARCHITECTURE §3.3): a
 * `job.running` that arrives after `job.succeeded` is recorded and ignored.
 */
export const jobStatuses = [
  "pending",
  "created",
  "running",
  "succeeded",
  "failed",
  "canceled",
  "timed_out",
] as const;
export type JobStatus = (typeof jobStatuses)[number];

const rank: Record<JobStatus, number> = {
  pending: 0,
  created: 1,
  running: 2,
  succeeded: 3,
  failed: 3,
  canceled: 3,
  timed_out: 3,
};

export function isTerminalJob(s: JobStatus): boolean {
  return rank[s] === 3;
}

/** The provider event types of ARCHITECTURE §7 and the job state each one means. */
export const jobEventTypes = {
  "job.created": "created",
  "job.running": "running",
  "job.succeeded": "succeeded",
  "job.failed": "failed",
  "job.canceled": "canceled",
} as const satisfies Record<string, JobStatus>;
export type JobEventType = keyof typeof jobEventTypes;

export function isJobEventType(t: string): t is JobEventType {
  return Object.hasOwn(jobEventTypes, t);
}

/**
 * The state a job moves to when an event of `type` arrives, or `null` when the event is
 * late or out of order and must be ignored.
 */
export function nextJobStatus(current: JobStatus, type: JobEventType): JobStatus | null {
  const to = jobEventTypes[type];
  return rank[to] > rank[current] ? to : null;
}
