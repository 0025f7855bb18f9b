/**
 * The provider event types of ARCHITECTURE §7; `jobEventTypes` in ./job.ts says which job
 * state each one means.
 */
export type JobEventType = "job.created" | "job.running" | "job.succeeded" | "job.failed" | "job.canceled";

/** Token counts a provider reports for one job; they feed the tenant's token budget (ARCHITECTURE §4.6). */
export interface JobUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

/** A provider event in the shape of ARCHITECTURE §7, after the provider adapter parsed it. */
export interface ProviderEvent {
  eventId: string;
  type: JobEventType;
  jobId: string;
  output?: unknown;
  error?: { code?: string; message: string } | undefined;
  usage?: JobUsage | undefined;
}
