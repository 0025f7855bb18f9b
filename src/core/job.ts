import type { ErrorCode, ErrorInfo } from "./errors.ts";
import type { JobEventType, JobUsage, ProviderEvent } from "./provider-event.ts";

export type { JobEventType };

/**
 * External job states. They only move forward (ARCHITECTURE §3.3): a `job.running` that
 * arrives after `job.succeeded` is recorded and ignored.
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

/**
 * The job's transition table: forward only. A job may skip states (a provider may report it
 * done before it reported it running), and any job that has not ended may fail, be canceled or
 * time out at its step's deadline. A state with no moves is terminal.
 */
export const jobMoves: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  pending: ["created", "running", "succeeded", "failed", "canceled", "timed_out"],
  created: ["running", "succeeded", "failed", "canceled", "timed_out"],
  running: ["succeeded", "failed", "canceled", "timed_out"],
  succeeded: [],
  failed: [],
  canceled: [],
  timed_out: [],
};

/** Whether the table lets a job in state `from` move to `to`. Staying put is not a move. */
export function canMoveJob(from: JobStatus, to: JobStatus): boolean {
  return jobMoves[from].includes(to);
}

export function isTerminalJob(s: JobStatus): boolean {
  return jobMoves[s].length === 0;
}

/**
 * Checks a job move a store operation is about to write; a move the table lacks is a defect,
 * never data to store. Returns `to`.
 */
export function jobMove<To extends JobStatus>(from: JobStatus, to: To): To {
  if (!canMoveJob(from, to)) throw new Error(`A ${from} job cannot move to ${to}.`);
  return to;
}

/** The state a job is registered in, until its provider has created it. */
export const newJobStatus = "pending" satisfies JobStatus;

/** The states of a job that has not ended: those the table still gives moves. */
export const liveJobStatuses: readonly JobStatus[] = jobStatuses.filter((s) => !isTerminalJob(s));

/** The live states of a job its provider has created: a cancel asks the provider to stop it. */
export const atProviderJobStatuses: readonly JobStatus[] = liveJobStatuses.filter((s) => s !== newJobStatus);

/**
 * The jobs that hold one of their tenant's slots (ARCHITECTURE §4.6): every job at its
 * provider, and a new one once admitted (its `slot` flag) while it is being created.
 */
export const slotHolders = {
  always: atProviderJobStatuses,
  whenAdmitted: [newJobStatus] as readonly JobStatus[],
};

/**
 * The state a job takes when its provider's id is recorded: the state the provider reports,
 * if the job is still new and the table allows the move; else it keeps its own (a job
 * canceled or timed out while it was being created stays so).
 */
export function statusOnCreated(current: JobStatus, reported: JobStatus): JobStatus {
  return current === newJobStatus && canMoveJob(current, reported) ? reported : current;
}

/** The provider event types of ARCHITECTURE §7 and the job state each one means. */
export const jobEventTypes = {
  "job.created": "created",
  "job.running": "running",
  "job.succeeded": "succeeded",
  "job.failed": "failed",
  "job.canceled": "canceled",
} as const satisfies Record<JobEventType, JobStatus>;

export function isJobEventType(t: string): t is JobEventType {
  return Object.hasOwn(jobEventTypes, t);
}

/**
 * The state a job moves to when an event of `type` arrives, or `null` when the event is
 * late or out of order and must be ignored: the table does not allow the move.
 */
export function nextJobStatus(current: JobStatus, type: JobEventType): JobStatus | null {
  const to = jobEventTypes[type];
  return canMoveJob(current, to) ? to : null;
}

/** A job as stored. */
export interface JobRow {
  id: string;
  tenantId: string;
  taskId: string;
  stepId: string;
  provider: string;
  externalId: string | null;
  status: JobStatus;
  input: unknown;
  output: unknown;
  error: ErrorInfo | null;
  usage: JobUsage | null;
  idempotencyKey: string;
  /** The provider's rate-limit answers to this job's creation so far (ARCHITECTURE §4.8). */
  throttles: number;
  createdAt: number;
  updatedAt: number;
}

/** What a provider event does to its job, decided from the job's status alone. */
export type JobEventEffect =
  /** ARCHITECTURE §4.4: a result after the step timed out, kept on the step for people to see, never applied. */
  | { kind: "late"; lateOutput: unknown; note: string }
  /** ARCHITECTURE §3.3: an event that would move the job backwards; recorded, never applied. */
  | { kind: "ignored"; note: string }
  /** The job ends, and its step with it. */
  | {
      kind: "end";
      jobStatus: "succeeded" | "failed" | "canceled";
      stepStatus: "succeeded" | "failed";
      fields: { output?: unknown; error?: ErrorInfo; usage?: unknown };
    }
  /** The job moves on (it is running) and its step keeps waiting. */
  | { kind: "move"; to: JobStatus };

export function jobEventEffect(
  status: JobStatus,
  provider: string,
  ev: ProviderEvent,
  now: number,
): JobEventEffect {
  const to = nextJobStatus(status, ev.type);
  if (status === "timed_out" && (ev.type === "job.succeeded" || ev.type === "job.failed")) {
    return {
      kind: "late",
      lateOutput: {
        type: ev.type,
        output: ev.output ?? null,
        error: ev.error ?? null,
        received_at: new Date(now).toISOString(),
      },
      note: "late result: the step had timed out",
    };
  }
  if (to === null) {
    return { kind: "ignored", note: `job is already ${status}; a ${ev.type} event cannot move it` };
  }
  if (to === "succeeded") {
    return {
      kind: "end",
      jobStatus: to,
      stepStatus: "succeeded",
      fields: { output: ev.output ?? null, usage: ev.usage },
    };
  }
  if (to === "failed" || to === "canceled") {
    const error: ErrorInfo = {
      // The provider's own code when it gave one; else ours, from the one table.
      code: ev.error?.code ?? ((to === "canceled" ? "JOB_CANCELED" : "JOB_FAILED") satisfies ErrorCode),
      message: ev.error?.message ?? `The ${provider} job ${ev.jobId} ${to}.`,
    };
    return { kind: "end", jobStatus: to, stepStatus: "failed", fields: { error, usage: ev.usage } };
  }
  return { kind: "move", to };
}

/** What an ended job adds to its tenant's usage: a failure, and the tokens its provider reported. */
export function jobEndCounts(
  jobStatus: JobStatus,
  usage: unknown,
): { jobs_failed?: number; tokens?: number } {
  const tokens = (usage as { total_tokens?: number } | undefined)?.total_tokens;
  return {
    ...(jobStatus === "failed" ? { jobs_failed: 1 } : {}),
    ...(typeof tokens === "number" && tokens > 0 ? { tokens: Math.round(tokens) } : {}),
  };
}
