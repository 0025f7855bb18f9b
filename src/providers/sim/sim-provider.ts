import type { JobStatus } from "../../core/job-state.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import { isObject, parseBriefEvent, parseJobError, parseUsage } from "../brief-event.ts";
import { jsonClient } from "../json-client.ts";
import {
  type CreatedJob,
  type CreateJobRequest,
  type JobSnapshot,
  type Provider,
  ProviderError,
} from "../provider.ts";

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
      if (typeof id !== "string" || id === "") {
        throw new ProviderError(`${name}: could not ${what}: HTTP ${status} carried no job id.`, {
          retriable: false,
          status,
        });
      }
      return { jobId: id, status: "created" };
    },

    parseEvent(body: unknown): ProviderEvent {
      return parseBriefEvent(body, "sim event");
    },

    async status(jobId: string): Promise<JobSnapshot> {
      const what = `read the status of job ${jobId}`;
      const { body } = await request(what, "GET", `/v1/jobs/${encodeURIComponent(jobId)}`);
      const fail = (why: string): never => {
        throw new ProviderError(`${name}: could not ${what}: ${why}.`, { retriable: false });
      };
      if (!isObject(body)) return fail("the answer is not a JSON object");
      const status = typeof body.status === "string" ? statuses[body.status] : undefined;
      if (status === undefined) return fail(`unknown status ${JSON.stringify(body.status)}`);
      const snapshot: JobSnapshot = { jobId, status };
      if (body.output !== undefined) snapshot.output = body.output;
      if (body.error !== undefined) snapshot.error = parseJobError(body.error, fail);
      if (body.usage !== undefined) snapshot.usage = parseUsage(body.usage, fail);
      return snapshot;
    },

    async cancel(jobId: string): Promise<void> {
      try {
        await request(`cancel job ${jobId}`, "POST", `/v1/jobs/${encodeURIComponent(jobId)}/cancel`);
      } catch (err) {
        // 409: the job had already ended, so there is nothing left to cancel.
        if (err instanceof ProviderError && err.status === 409) return;
        throw err;
      }
    },
  };
}
