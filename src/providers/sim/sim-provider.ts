import type { JobStatus } from "../../core/job.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import { isObject, parseBriefEvent, parseJobError, parseUsage } from "../brief-event.ts";
import { jsonClient } from "../json-client.ts";
import type { CreatedJob, CreateJobRequest, JobSnapshot, Provider } from "../provider.ts";
import { cancelJob, noJobId, refusal, statusSnapshot } from "../rest-adapter.ts";

export interface SimProviderOptions {
  /** The simulator's base URL, e.g. `http://127.0.0.1:8788`. */
  baseUrl: string;
  /** The provider's name in the engine; default `sim`. */
  name?: string;
  fetchImpl?: typeof fetch;
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

/** The simulator's job statuses, as the engine names job states. */
const statuses: Record<string, JobStatus> = {
  queued: "created",
  running: "running",
  succeeded: "succeeded",
  failed: "failed",
  canceled: "canceled",
};

/**
 * The `Provider` for the simulator's HTTP API. `create` sends the engine's idempotency key
 * as `Idempotency-Key`, so a retried dispatch gets the job created before (ARCHITECTURE §3.7).
 * A network failure, a timeout, a 5xx, a 408 or a 429 is a retriable `ProviderError`; any
 * other refusal is not.
 */
export function simProvider(options: SimProviderOptions): Provider {
  const name = options.name ?? "sim";
  const request = jsonClient({
    name,
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs ?? 10_000,
    ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}),
  });

  return {
    name,

    async create(req: CreateJobRequest): Promise<CreatedJob> {
      const what = `create the job of step ${req.stepId} of task ${req.taskId}`;
      const { status, body } = await request(what, "POST", "/v1/jobs", {
        body: { input: req.input, webhook_url: req.webhookUrl },
        headers: { "idempotency-key": req.idempotencyKey },
      });
      const id = isObject(body) ? body.id : undefined;
      if (typeof id !== "string" || id === "") return noJobId(name, what, status, "job id");
      return { jobId: id, status: "created" };
    },

    parseEvent(body: unknown): ProviderEvent {
      return parseBriefEvent(body, "sim event");
    },

    async status(jobId: string): Promise<JobSnapshot> {
      const what = `read the status of job ${jobId}`;
      const answer = await request(what, "GET", `/v1/jobs/${encodeURIComponent(jobId)}`);
      const fail = refusal(name, what);
      const { object: body, snapshot } = statusSnapshot(jobId, answer.body, statuses, fail, {
        object: "the answer",
        status: "status",
      });
      if (body.output !== undefined) snapshot.output = body.output;
      if (body.error !== undefined) snapshot.error = parseJobError(body.error, fail);
      if (body.usage !== undefined) snapshot.usage = parseUsage(body.usage, fail);
      return snapshot;
    },

    async cancel(jobId: string): Promise<void> {
      await cancelJob(request, `cancel job ${jobId}`, `/v1/jobs/${encodeURIComponent(jobId)}/cancel`);
    },
  };
}
