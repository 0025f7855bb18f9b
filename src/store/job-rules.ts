import type { ErrorCode, ErrorInfo } from "../core/errors.ts";
import { type JobStatus, nextJobStatus } from "../core/job-state.ts";
import type { ProviderEvent } from "../core/provider-event.ts";

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
