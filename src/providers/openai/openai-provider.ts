import type { ProviderEvent } from "../../core/provider-event.ts";
import { isObject, segment } from "../json-client.ts";
import type { CreatedJob, CreateJobRequest, JobSnapshot, Provider } from "../provider.ts";
import {
  type ApiKeyOptions,
  apiKeyClient,
  cancelJob,
  noJobId,
  refusal,
  snapshotReads,
} from "../rest-adapter.ts";
import { parseOpenAIEvent } from "./openai-events.ts";
import { batchSnapshot, isBatchId, responseSnapshot } from "./openai-objects.ts";

/** `name` defaults to `openai`, `baseUrl` to `https://api.openai.com/v1`. */
export type OpenAIProviderOptions = ApiKeyOptions;

/**
 * The `Provider` for OpenAI's asynchronous APIs. `input.kind === "batch"` creates a Batch
 * (`POST /batches`); any other input is the body of a background response
 * (`POST /responses` with `background: true`). Every creation carries the engine's key as
 * `Idempotency-Key` (ARCHITECTURE §3.7) and `metadata.longhaul_task` / `longhaul_step`.
 *
 * OpenAI's webhooks are set per project, not per request: `webhookUrl` is not sent, and the
 * project's endpoint must point at this deployment's `/hooks/<source>`.
 */
export function openaiProvider(options: OpenAIProviderOptions): Provider {
  const { name, request } = apiKeyClient(options, {
    name: "openai",
    baseUrl: "https://api.openai.com/v1",
    key: "an OpenAI API key",
    headers: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  });

  const objectPath = (jobId: string) =>
    isBatchId(jobId) ? `/batches/${segment(jobId)}` : `/responses/${segment(jobId)}`;

  async function snapshot(jobId: string, what: string): Promise<JobSnapshot> {
    const { body } = await request(what, "GET", objectPath(jobId));
    const fail = refusal(name, what);
    return isBatchId(jobId) ? batchSnapshot(jobId, body, fail) : responseSnapshot(jobId, body, fail);
  }

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
        if (typeof rest.input_file_id !== "string" || rest.input_file_id === "") {
          return refuse("a batch needs input_file_id, the id of an uploaded JSONL file");
        }
        if (typeof rest.endpoint !== "string" || rest.endpoint === "") {
          return refuse('a batch needs endpoint, e.g. "/v1/responses"');
        }
        path = "/batches";
        body = { ...rest, completion_window: rest.completion_window ?? "24h", metadata: tags };
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

    ...snapshotReads(name, snapshot),

    async cancel(jobId: string): Promise<void> {
      await cancelJob(request, `cancel ${jobId}`, `${objectPath(jobId)}/cancel`);
    },
  };
}
