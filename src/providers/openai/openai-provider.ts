import { LonghaulError } from "../../core/errors.ts";
import type { JobUsage, ProviderEvent } from "../../core/provider-event.ts";
import { isObject, jsonClient, segment } from "../json-client.ts";
import {
  type CreatedJob,
  type CreateJobRequest,
  type JobSnapshot,
  type Provider,
  ProviderError,
} from "../provider.ts";
import { parseOpenAIEvent } from "./openai-events.ts";
import { batchSnapshot, isBatchId, responseSnapshot } from "./openai-objects.ts";

export interface OpenAIProviderOptions {
  /** The provider's name in the engine; default `openai`. */
  name?: string;
  /** Default `https://api.openai.com/v1`. */
  baseUrl?: string;
  apiKey: string;
  fetchImpl?: typeof fetch;
  /** Per request; default 30 s. */
  timeoutMs?: number;
}

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
  const name = options.name ?? "openai";
  if (typeof options.apiKey !== "string" || options.apiKey === "") {
    throw new LonghaulError("CONFIG_INVALID", `Provider "${name}" needs an OpenAI API key (apiKey).`);
  }
  const request = jsonClient({
    name,
    baseUrl: options.baseUrl ?? "https://api.openai.com/v1",
    headers: { authorization: `Bearer ${options.apiKey}` },
    ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}),
    timeoutMs: options.timeoutMs ?? 30_000,
  });

  const objectPath = (jobId: string) =>
    isBatchId(jobId) ? `/batches/${segment(jobId)}` : `/responses/${segment(jobId)}`;

  async function snapshot(jobId: string, what: string): Promise<JobSnapshot> {
    const { body } = await request(what, "GET", objectPath(jobId));
    const fail = (why: string): never => {
      throw new ProviderError(`${name}: could not ${what}: ${why}.`, { retriable: false });
    };
    return isBatchId(jobId) ? batchSnapshot(jobId, body, fail) : responseSnapshot(jobId, body, fail);
  }

  return {
    name,

    async create(req: CreateJobRequest): Promise<CreatedJob> {
      const what = `create the job of step ${req.stepId} of task ${req.taskId}`;
      const refuse = (why: string): never => {
        throw new ProviderError(`${name}: could not ${what}: ${why}.`, { retriable: false });
      };
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
      if (typeof id !== "string" || id === "") {
        throw new ProviderError(`${name}: could not ${what}: HTTP ${status} carried no id.`, {
          retriable: false,
          status,
        });
      }
      return { jobId: id, status: "created" };
    },

    parseEvent(body: unknown): ProviderEvent {
      return parseOpenAIEvent(body);
    },

    status(jobId: string): Promise<JobSnapshot> {
      return snapshot(jobId, `read the status of ${jobId}`);
    },

    async fetchResult(jobId: string): Promise<{ output: unknown; usage?: JobUsage | undefined }> {
      const what = `fetch the result of ${jobId}`;
      const s = await snapshot(jobId, what);
      if (s.status === "succeeded") return { output: s.output ?? null, usage: s.usage };
      const running = s.status === "running" || s.status === "created";
      throw new ProviderError(
        `${name}: could not ${what}: it is ${s.status}${s.error ? ` (${s.error.message})` : ""}` +
          `${running ? "; ask again later" : ", so there is no result"}.`,
        { retriable: running },
      );
    },

    async cancel(jobId: string): Promise<void> {
      try {
        await request(`cancel ${jobId}`, "POST", `${objectPath(jobId)}/cancel`);
      } catch (err) {
        // 409: the job had already ended, so there is nothing left to cancel.
        if (err instanceof ProviderError && err.status === 409) return;
        throw err;
      }
    },
  };
}
