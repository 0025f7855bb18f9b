import type { ProviderEvent } from "../../core/provider-event.ts";
import { requestBatchOf } from "../batch/batch-input.ts";
import {
  type BatchesApi,
  batchItems,
  ITEMS_TAG,
  isItemsBatch,
  uploadBatchInput,
} from "../batch/openai-batches.ts";
import { isObject, segment } from "../json-client.ts";
import {
  type CreatedJob,
  type CreateJobRequest,
  JobResultFailure,
  type JobSnapshot,
  type Provider,
} from "../provider.ts";
import {
  type ApiKeyOptions,
  apiKeyClient,
  cancelJob,
  noJobId,
  notEnded,
  refusal,
  snapshotReads,
} from "../rest-adapter.ts";
import { parseOpenAIEvent } from "./openai-events.ts";
import { batchSnapshot, isBatchId, responseSnapshot } from "./openai-objects.ts";

/** `name` defaults to `openai`, `baseUrl` to `https://api.openai.com/v1`. */
export type OpenAIProviderOptions = ApiKeyOptions;

/**
 * The `Provider` for OpenAI's asynchronous APIs. `input.kind === "batch"` creates a Batch
 * (`POST /batches`): with `requests` (`step.batch`), it first uploads them as the input file
 * and its result is the items merged from the result files; with `input_file_id`, a file
 * uploaded beforehand, its result is the file ids. Any other input is the body of a background response
 * (`POST /responses` with `background: true`). Every creation carries the engine's key as
 * `Idempotency-Key` (ARCHITECTURE §3.7) and `metadata.longhaul_task` / `longhaul_step`.
 *
 * OpenAI's webhooks are set per project, not per request: `webhookUrl` is not sent, and the
 * project's endpoint must point at this deployment's `/hooks/<source>`.
 */
export function openaiProvider(options: OpenAIProviderOptions): Provider {
  const { name, request, download } = apiKeyClient(options, {
    name: "openai",
    baseUrl: "https://api.openai.com/v1",
    key: "an OpenAI API key",
    headers: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  });

  const objectPath = (jobId: string) =>
    isBatchId(jobId) ? `/batches/${segment(jobId)}` : `/responses/${segment(jobId)}`;

  const batches: BatchesApi = { name, request, download, prefix: "" };

  async function read(jobId: string, what: string): Promise<{ body: unknown; snapshot: JobSnapshot }> {
    const { body } = await request(what, "GET", objectPath(jobId));
    const fail = refusal(name, what);
    const snapshot = isBatchId(jobId)
      ? batchSnapshot(jobId, body, fail)
      : responseSnapshot(jobId, body, fail);
    return { body, snapshot };
  }
  const snapshot = async (jobId: string, what: string) => (await read(jobId, what)).snapshot;
  const reads = snapshotReads(name, snapshot);

  return {
    name,

    async create(req: CreateJobRequest): Promise<CreatedJob> {
      const what = `create the job of step ${req.stepId} of task ${req.taskId}`;
      const refuse = refusal(name, what);
      if (!isObject(req.input)) return refuse("the step's input must be a JSON object");
      const { kind, metadata, ...rest } = req.input;
      const tags = {
        ...(isObject(metadata) ? metadata : {}),
        longhaul_task: req.taskId,
        longhaul_step: req.stepId,
      };
      let path: string;
      let body: Record<string, unknown>;
      if (kind === "batch") {
        const requests = requestBatchOf(rest, refuse);
        path = "/batches";
        if (requests !== null) {
          const inputFileId = await uploadBatchInput(batches, what, req.idempotencyKey, requests);
          const { requests: _sent, ...others } = rest;
          body = {
            ...others,
            input_file_id: inputFileId,
            completion_window: rest.completion_window ?? "24h",
            metadata: { ...tags, [ITEMS_TAG]: "true" },
          };
        } else {
          if (typeof rest.input_file_id !== "string" || rest.input_file_id === "") {
            return refuse("a batch needs requests, or input_file_id, the id of an uploaded JSONL file");
          }
          if (typeof rest.endpoint !== "string" || rest.endpoint === "") {
            return refuse('a batch needs endpoint, e.g. "/v1/responses"');
          }
          body = { ...rest, completion_window: rest.completion_window ?? "24h", metadata: tags };
        }
      } else {
        path = "/responses";
        body = { ...rest, background: true, metadata: tags };
      }
      const { status, body: answer } = await request(what, "POST", path, {
        body,
        headers: { "idempotency-key": req.idempotencyKey },
      });
      const id = isObject(answer) ? answer.id : undefined;
      if (typeof id !== "string" || id === "") return noJobId(name, what, status, "id");
      return { jobId: id, status: "created" };
    },

    parseEvent(body: unknown): ProviderEvent {
      return parseOpenAIEvent(body);
    },

    status: reads.status,

    /**
     * A batch built from requests is read from its files (`batchItems`), kept in
     * `context.files` when the engine lends a blob store; anything else is its object's result.
     */
    async fetchResult(jobId, context) {
      if (!isBatchId(jobId)) return reads.fetchResult(jobId);
      const what = `fetch the result of ${jobId}`;
      const { body, snapshot: s } = await read(jobId, what);
      // `batch.expired` is read as an end with a result; a batch of the older kind has none.
      if (s.status === "failed" && isObject(body) && body.status === "expired") {
        throw new JobResultFailure({
          code: s.error?.code ?? "expired",
          message: s.error?.message ?? "expired",
        });
      }
      if (s.status !== "succeeded") return notEnded(name, what, s);
      if (!isItemsBatch(body)) return { output: s.output ?? null, usage: s.usage };
      return batchItems(batches, jobId, body as Record<string, unknown>, context?.files);
    },

    async cancel(jobId: string): Promise<void> {
      await cancelJob(request, `cancel ${jobId}`, `${objectPath(jobId)}/cancel`);
    },
  };
}
