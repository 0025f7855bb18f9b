import type { JobUsage } from "../../core/provider-event.ts";
import type { Download } from "../download-client.ts";
import { isObject, type JsonRequest, segment } from "../json-client.ts";
import type { ResultFiles } from "../provider.ts";
import { refusal } from "../rest-adapter.ts";
import { batchInputFile, type RequestBatch } from "./batch-input.ts";
import { readOpenAIResultLine } from "./openai-result-line.ts";
import { resultFile } from "./result-file.ts";
import { resultFileKey } from "./result-file-key.ts";
import { inputOrder, mergeResults, type ResultItem } from "./result-merge.ts";

/**
 * The Batch and Files APIs in OpenAI's shapes, which the OpenAI adapter and the simulator's
 * adapter share: `prefix` is where they live under the client's base URL (`""` for OpenAI,
 * whose base URL ends in `/v1`; `/v1` for the simulator).
 */
export interface BatchesApi {
  name: string;
  request: JsonRequest;
  download: Download;
  prefix: string;
}

/**
 * The metadata tag of a batch longhaul built from `requests`: its result is merged into items.
 * A batch created from an `input_file_id` lacks it and keeps its older result, the file ids.
 */
export const ITEMS_TAG = "longhaul_items";

/** Whether a batch object is one longhaul built from requests (`metadata.longhaul_items`). */
export function isItemsBatch(batch: unknown): boolean {
  return isObject(batch) && isObject(batch.metadata) && batch.metadata[ITEMS_TAG] === "true";
}

/**
 * Uploads the requests as the batch's input file (`POST /files`, multipart, `purpose=batch`)
 * and answers the file's id. The upload carries `<key>:input` as its `Idempotency-Key`, so a
 * service that honours it (the simulator does) keeps one file per dispatch.
 */
export async function uploadBatchInput(
  api: BatchesApi,
  what: string,
  idempotencyKey: string,
  batch: RequestBatch,
): Promise<string> {
  const form = new FormData();
  form.append("purpose", "batch");
  form.append("file", new Blob([batchInputFile(batch)], { type: "application/jsonl" }), "requests.jsonl");
  const { status, body } = await api.request(
    `${what}: upload its input file`,
    "POST",
    `${api.prefix}/files`,
    {
      form,
      headers: { "idempotency-key": `${idempotencyKey}:input` },
    },
  );
  const id = isObject(body) ? body.id : undefined;
  if (typeof id !== "string" || id === "") {
    return refusal(api.name, `${what}: upload its input file`)(`HTTP ${status} carried no file id`);
  }
  return id;
}

/**
 * The items of a batch that ended: its input file gives the order of the requests, its
 * output and error files the answers, each downloaded into `files` (or memory) under
 * `providers/<name>/batches/<id>/…` and merged line by line. The usage is the items' sum.
 */
export async function batchItems(
  api: BatchesApi,
  jobId: string,
  batch: Record<string, unknown>,
  files: ResultFiles | undefined,
): Promise<{ output: { items: ResultItem[] }; usage: JobUsage }> {
  const what = `fetch the result of ${jobId}`;
  const fileId = (field: string) => {
    const id = batch[field];
    if (id === undefined || id === null || id === "") return null;
    if (typeof id !== "string") return refusal(api.name, what)(`${field} is not a file id`);
    return id;
  };
  const inputId = fileId("input_file_id");
  if (inputId === null) return refusal(api.name, what)("the batch names no input_file_id");
  const fetch = (id: string, file: string) =>
    resultFile({
      files,
      key: resultFileKey(api.name, jobId, `${file}.jsonl`),
      fetch: () =>
        api.download(
          `download the ${file} file ${id} of ${jobId}`,
          `${api.prefix}/files/${segment(id)}/content`,
        ),
    });
  const order = await inputOrder(`input file ${inputId}`, await fetch(inputId, "input"));
  const sources = [];
  for (const file of ["output", "error"] as const) {
    const id = fileId(`${file}_file_id`);
    if (id !== null)
      sources.push({ name: `${file} file ${id}`, bytes: await fetch(id, file), read: readOpenAIResultLine });
  }
  const { items, usage } = await mergeResults(order, sources);
  return { output: { items }, usage };
}
