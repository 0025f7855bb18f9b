import type { ProviderEvent } from "../../core/provider-event.ts";
import { isObject } from "../json-client.ts";
import {
  type CreatedJob,
  type CreateJobRequest,
  type JobSnapshot,
  type Provider,
  ProviderError,
} from "../provider.ts";
import {
  type ApiKeyOptions,
  apiKeyClient,
  cancelJob,
  noJobId,
  refusal,
  snapshotReads,
} from "../rest-adapter.ts";
import { parseGeminiEvent } from "./gemini-events.ts";
import {
  batchPage,
  interactionSnapshot,
  isInteraction,
  namePath,
  operationSnapshot,
} from "./gemini-resources.ts";

/**
 * The bound of the lookup before a batch create: `GET /batches` takes no filter on the Gemini
 * API, so pages are read until a match, the last page, or this many pages of this size.
 */
export const BATCH_LOOKUP_PAGE_SIZE = 100;
export const BATCH_LOOKUP_PAGES = 5;

/** `name` defaults to `gemini`, `baseUrl` to `https://generativelanguage.googleapis.com/v1beta`. */
export type GeminiProviderOptions = ApiKeyOptions;

/**
 * The `Provider` for the Gemini API's asynchronous work, chosen by `input.kind`:
 * - `"batch"`: `POST /models/{model}:batchGenerateContent`; the job is `batches/…`.
 * - `"long_running"`: `POST /models/{model}:{method}` (default `predictLongRunning`, e.g.
 *   video generation); the job is the returned operation name.
 * - anything else: a background interaction, `POST /interactions` with `background: true`;
 *   the job is `interactions/{id}`.
 * Each request carries a per-request webhook config naming `webhookUrl`, so its events come
 * back to the source of this provider, and the engine's key as `Idempotency-Key`.
 *
 * The Gemini API documents no idempotency key, so a create retried after its answer was lost
 * could make a second paid batch. Before creating a batch named `longhaul <key>` the adapter
 * therefore looks for one by that name (`GET /batches`, bounded) and reuses it. Interactions
 * and other long-running operations have no such lookup: the API cannot list interactions,
 * and a `predictLongRunning` operation carries nothing of the request to match.
 */
export function geminiProvider(options: GeminiProviderOptions): Provider {
  const { name, request } = apiKeyClient(options, {
    name: "gemini",
    baseUrl: "https://generativelanguage.googleapis.com/v1beta",
    key: "a Gemini API key",
    headers: (apiKey) => ({ "x-goog-api-key": apiKey }),
  });

  function resourcePath(jobId: string, what: string): string {
    return namePath(jobId) ?? refusal(name, what)(`"${jobId}" is not a resource name`);
  }

  /**
   * The name of a batch whose display name is `displayName`, within the first
   * `BATCH_LOOKUP_PAGES` pages Gemini lists; undefined when there is none. Any failure throws: creating
   * after a failed lookup could make the very duplicate the lookup is there to prevent.
   */
  async function findBatch(displayName: string, req: CreateJobRequest): Promise<string | undefined> {
    const lookup =
      `look up an earlier batch named "${displayName}" before creating the job of step ` +
      `${req.stepId} of task ${req.taskId}, so nothing was created`;
    let pageToken: string | undefined;
    for (let page = 0; page < BATCH_LOOKUP_PAGES; page++) {
      const query = new URLSearchParams({ pageSize: String(BATCH_LOOKUP_PAGE_SIZE) });
      if (pageToken !== undefined) query.set("pageToken", pageToken);
      const { body } = await request(lookup, "GET", `/batches?${query}`);
      const read = batchPage(body);
      if (read === null) {
        throw new ProviderError(
          `${name}: could not ${lookup}: the answer is not a list of operations; the request can be retried.`,
          { retriable: true },
        );
      }
      const found = read.batches.find((b) => b.displayName === displayName);
      if (found) return found.name;
      if (read.nextPageToken === undefined) return undefined;
      pageToken = read.nextPageToken;
    }
    return undefined;
  }

  async function snapshot(jobId: string, what: string): Promise<JobSnapshot> {
    const { body } = await request(what, "GET", resourcePath(jobId, what));
    const fail = refusal(name, what);
    return isInteraction(jobId)
      ? interactionSnapshot(jobId, body, fail)
      : operationSnapshot(jobId, body, fail);
  }

  return {
    name,

    async create(req: CreateJobRequest): Promise<CreatedJob> {
      const what = `create the job of step ${req.stepId} of task ${req.taskId}`;
      const keyedName = `longhaul ${req.idempotencyKey}`;
      const refuse = refusal(name, what);
      if (!isObject(req.input)) return refuse("the step's input must be a JSON object");
      const { kind, ...input } = req.input;
      const webhook_config = {
        uris: [req.webhookUrl],
        user_metadata: { longhaul_task: req.taskId, longhaul_step: req.stepId },
      };
      const modelPath = () => {
        const model = typeof input.model === "string" ? input.model.replace(/^models\//, "") : "";
        return model === ""
          ? refuse(`a ${String(kind)} job needs model`)
          : `/models/${encodeURIComponent(model)}`;
      };

      let path: string;
      let body: Record<string, unknown>;
      if (kind === "batch") {
        const { model: _model, requests, file_name, input_config, ...batch } = input;
        const source =
          input_config ??
          (Array.isArray(requests)
            ? {
                requests: {
                  requests: requests.map((r) => (isObject(r) && "request" in r ? r : { request: r })),
                },
              }
            : typeof file_name === "string"
              ? { file_name }
              : refuse("a batch needs requests, file_name or input_config"));
        const named = { display_name: keyedName, ...batch, input_config: source, webhook_config };
        path = `${modelPath()}:batchGenerateContent`;
        body = { batch: named };
        // Only the default name carries the key; a batch named by its input cannot be told apart.
        if (named.display_name === keyedName) {
          const earlier = await findBatch(keyedName, req);
          if (earlier !== undefined) return { jobId: earlier, status: "created" };
        }
      } else if (kind === "long_running") {
        const { model: _model, method = "predictLongRunning", ...rest } = input;
        if (typeof method !== "string" || !/^[A-Za-z]+$/.test(method))
          return refuse("method must be a method name");
        path = `${modelPath()}:${method}`;
        body = { ...rest, webhook_config };
      } else {
        path = "/interactions";
        body = { ...input, background: true, webhook_config };
      }

      const { status, body: answer } = await request(what, "POST", path, {
        body,
        headers: { "idempotency-key": req.idempotencyKey },
      });
      const ref = !isObject(answer) ? undefined : path === "/interactions" ? answer.id : answer.name;
      if (typeof ref !== "string" || ref === "") return noJobId(name, what, status, "resource name");
      const jobId = path === "/interactions" && !ref.includes("/") ? `interactions/${ref}` : ref;
      return { jobId, status: "created" };
    },

    parseEvent(body: unknown): ProviderEvent {
      return parseGeminiEvent(body);
    },

    ...snapshotReads(name, snapshot),

    async cancel(jobId: string): Promise<void> {
      const what = `cancel ${jobId}`;
      const path = resourcePath(jobId, what);
      // Interactions cancel at a sub-resource; operations (batches included) by a custom method.
      await cancelJob(request, what, isInteraction(jobId) ? `${path}/cancel` : `${path}:cancel`);
    },
  };
}
