import type { ProviderEvent } from "../../core/provider-event.ts";
import { requestBatchOf } from "../batch/batch-input.ts";
import { downloadClient } from "../download-client.ts";
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
  type Fail,
  noJobId,
  notEnded,
  refusal,
  snapshotReads,
} from "../rest-adapter.ts";
import { geminiBatchItems } from "./gemini-batch-items.ts";
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
  const baseUrl = options.baseUrl ?? "https://generativelanguage.googleapis.com/v1beta";
  const { name, request } = apiKeyClient(options, {
    name: "gemini",
    baseUrl,
    key: "a Gemini API key",
    headers: (apiKey) => ({ "x-goog-api-key": apiKey }),
  });
  // Files' bytes come from the same path under `/download` (`/download/v1beta/files/…:download`).
  const downloadBase = new URL(baseUrl);
  downloadBase.pathname = `/download${downloadBase.pathname}`;
  const download = downloadClient({
    name,
    baseUrl: downloadBase.href,
    headers: { "x-goog-api-key": options.apiKey },
    ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}),
    timeoutMs: options.timeoutMs ?? 30_000,
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

  async function read(jobId: string, what: string): Promise<{ body: unknown; snapshot: JobSnapshot }> {
    const { body } = await request(what, "GET", resourcePath(jobId, what));
    const fail = refusal(name, what);
    const snapshot = isInteraction(jobId)
      ? interactionSnapshot(jobId, body, fail)
      : operationSnapshot(jobId, body, fail);
    return { body, snapshot };
  }
  const snapshot = async (jobId: string, what: string) => (await read(jobId, what)).snapshot;
  const reads = snapshotReads(name, snapshot);

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
        const keyed = keyedRequests(input, refuse);
        // `step.batch`'s form: each request inline, its custom_id as the key Gemini echoes;
        // its endpoint, metadata and window are not fields of a Gemini batch.
        const { endpoint: _e, metadata: _m, completion_window: _w, ...fields } = input;
        if (keyed !== null) Object.assign(input, { model: keyed.model });
        const {
          model: _model,
          requests: given,
          file_name,
          input_config,
          ...batch
        } = keyed === null ? input : fields;
        const requests = keyed === null ? given : keyed.requests;
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

    status: reads.status,

    /**
     * A batch whose answers are request by request (a responses file, or inline responses
     * with keys) gives items merged from them, the file kept in `context.files`; anything
     * else its resource's result.
     */
    async fetchResult(jobId, context) {
      const what = `fetch the result of ${jobId}`;
      const { body, snapshot: s } = await read(jobId, what);
      if (s.status !== "succeeded") return notEnded(name, what, s);
      if (!isInteraction(jobId) && isObject(body)) {
        const items = await geminiBatchItems({ name, download }, jobId, body, context?.files);
        if (items !== null) return items;
      }
      return { output: s.output ?? null, usage: s.usage };
    },

    async cancel(jobId: string): Promise<void> {
      const what = `cancel ${jobId}`;
      const path = resourcePath(jobId, what);
      // Interactions cancel at a sub-resource; operations (batches included) by a custom method.
      await cancelJob(request, what, isInteraction(jobId) ? `${path}/cancel` : `${path}:cancel`);
    },
  };
}

/**
 * `step.batch`'s `{endpoint, requests: [{custom_id, body}]}` as Gemini's inline requests
 * `{request, metadata: {key}}`, and the model: `input.model`, else the one `endpoint` names
 * (`/models/gemini-2.5-flash:generateContent`). Null for any other batch input.
 */
function keyedRequests(
  input: Record<string, unknown>,
  refuse: Fail,
): { model: string; requests: unknown[] } | null {
  const list = input.requests;
  if (!Array.isArray(list) || !list.every((r) => isObject(r) && "custom_id" in r)) return null;
  const batch = requestBatchOf(input, refuse);
  if (batch === null) return null;
  const named = /(?:^|\/)models\/([^/:]+)/.exec(batch.endpoint)?.[1];
  const model = typeof input.model === "string" ? input.model : named;
  if (model === undefined) {
    return refuse(
      'a batch needs model, or an endpoint naming one, such as "/models/gemini-2.5-flash:generateContent"',
    );
  }
  return {
    model,
    requests: batch.requests.map((r) => ({ request: r.body, metadata: { key: r.custom_id } })),
  };
}
