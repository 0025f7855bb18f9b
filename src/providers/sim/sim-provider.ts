import type { JobStatus } from "../../core/job.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import { requestBatchOf } from "../batch/batch-input.ts";
import { type BatchesApi, batchItems, ITEMS_TAG, uploadBatchInput } from "../batch/openai-batches.ts";
import { isObject, parseBriefEvent, parseJobError, parseUsage } from "../brief-event.ts";
import { downloadClient } from "../download-client.ts";
import { jsonClient } from "../json-client.ts";
import { batchSnapshot, isBatchId } from "../openai/openai-objects.ts";
import type { CreatedJob, CreateJobRequest, JobSnapshot, Provider } from "../provider.ts";
import { cancelJob, noJobId, notEnded, refusal, statusSnapshot } from "../rest-adapter.ts";

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
 * The `Provider` for the simulator's HTTP API. A `{kind: "batch", endpoint, requests}` input
 * (`step.batch`) is a batch in OpenAI's shapes, built and read by the OpenAI adapter's code;
 * any other input is a job. `create` sends the engine's idempotency key
 * as `Idempotency-Key`, so a retried dispatch gets the job created before (ARCHITECTURE §3.7).
 * A network failure, a timeout, a 5xx, a 408 or a 429 is a retriable `ProviderError`; any
 * other refusal is not.
 */
export function simProvider(options: SimProviderOptions): Provider {
  const name = options.name ?? "sim";
  const client = {
    name,
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs ?? 10_000,
    ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}),
  };
  const request = jsonClient(client);
  const batches: BatchesApi = { name, request, download: downloadClient(client), prefix: "/v1" };

  async function readBatch(jobId: string, what: string) {
    const { body } = await request(what, "GET", `/v1/batches/${encodeURIComponent(jobId)}`);
    return { body, snapshot: batchSnapshot(jobId, body, refusal(name, what)) };
  }

  return {
    name,

    async create(req: CreateJobRequest): Promise<CreatedJob> {
      const what = `create the job of step ${req.stepId} of task ${req.taskId}`;
      if (isObject(req.input) && req.input.kind === "batch") return createBatch(req, req.input, what);
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
      if (isBatchId(jobId)) return (await readBatch(jobId, `read the status of batch ${jobId}`)).snapshot;
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

    /**
     * A job's events carry its output, so only a batch's result is fetched: the items merged
     * from its files, kept in `context.files` when the engine lends a blob store.
     */
    async fetchResult(jobId, context) {
      const what = `fetch the result of ${jobId}`;
      // A job's terminal event is applied as it came, as before batches had results to fetch.
      if (!isBatchId(jobId)) return { output: undefined };
      const { body, snapshot } = await readBatch(jobId, what);
      if (snapshot.status !== "succeeded") return notEnded(name, what, snapshot);
      return batchItems(batches, jobId, body as Record<string, unknown>, context?.files);
    },

    async cancel(jobId: string): Promise<void> {
      const collection = isBatchId(jobId) ? "batches" : "jobs";
      await cancelJob(request, `cancel ${jobId}`, `/v1/${collection}/${encodeURIComponent(jobId)}/cancel`);
    },
  };

  /**
   * `{kind: "batch", endpoint, requests}` as a batch in OpenAI's shapes, through the code the
   * OpenAI adapter uses: the requests uploaded as a JSONL file, then the batch created with
   * the engine's key and, the simulator's own addition, the webhook URL its end is sent to.
   */
  async function createBatch(
    req: CreateJobRequest,
    input: Record<string, unknown>,
    what: string,
  ): Promise<CreatedJob> {
    const refuse = refusal(name, what);
    const requests = requestBatchOf(input, refuse);
    if (requests === null) return refuse("a batch needs requests, each {custom_id, body}");
    const inputFileId = await uploadBatchInput(batches, what, req.idempotencyKey, requests);
    const { status, body } = await request(what, "POST", "/v1/batches", {
      body: {
        input_file_id: inputFileId,
        endpoint: requests.endpoint,
        completion_window: input.completion_window ?? "24h",
        metadata: {
          ...(isObject(input.metadata) ? input.metadata : {}),
          longhaul_task: req.taskId,
          longhaul_step: req.stepId,
          [ITEMS_TAG]: "true",
        },
        webhook_url: req.webhookUrl,
      },
      headers: { "idempotency-key": req.idempotencyKey },
    });
    const id = isObject(body) ? body.id : undefined;
    if (typeof id !== "string" || id === "") return noJobId(name, what, status, "batch id");
    return { jobId: id, status: "created" };
  }
}
