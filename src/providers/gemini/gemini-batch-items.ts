import type { JobUsage } from "../../core/provider-event.ts";
import { resultFile } from "../batch/result-file.ts";
import { resultFileKey } from "../batch/result-file-key.ts";
import { itemUsage, mergeResults, type ResultItem } from "../batch/result-merge.ts";
import type { Download } from "../download-client.ts";
import { isObject } from "../json-client.ts";
import type { ResultFiles } from "../provider.ts";
import { namePath } from "./gemini-resources.ts";

/**
 * The items of a Gemini batch that succeeded, or null when its result is not request by
 * request (no responses file, and inline responses without keys): the operation's result as
 * before. A `responsesFile` is downloaded through the Files API's download endpoint
 * (`/download/v1beta/files/…:download?alt=media`) into `files` (or memory) and merged line
 * by line like OpenAI's result files; inline responses carrying `metadata.key` are merged
 * the same way. When the operation lists its inline requests' keys, they give the order and
 * the set of custom_ids; otherwise the answers' order is the requests' (as Gemini writes them).
 */
export async function geminiBatchItems(
  api: { name: string; download: Download },
  jobId: string,
  operation: Record<string, unknown>,
  files: ResultFiles | undefined,
): Promise<{ output: { items: ResultItem[] }; usage: JobUsage } | null> {
  const metadata = isObject(operation.metadata) ? operation.metadata : {};
  const result = isObject(operation.response)
    ? operation.response
    : isObject(metadata.output)
      ? metadata.output
      : {};
  const order = inputKeys(metadata.inputConfig);
  let merged: { items: ResultItem[]; usage: JobUsage };
  const file = result.responsesFile;
  if (typeof file === "string" && file !== "") {
    const path = namePath(file);
    if (path === null) return null;
    const bytes = await resultFile({
      files,
      key: resultFileKey(api.name, jobId, "responses.jsonl"),
      fetch: () =>
        api.download(`download the responses file ${file} of ${jobId}`, `${path}:download?alt=media`),
    });
    merged = await mergeResults(order, [
      { name: `responses file ${file}`, bytes, read: readGeminiResultLine },
    ]);
  } else {
    const inline = isObject(result.inlinedResponses) ? result.inlinedResponses.inlinedResponses : undefined;
    if (!Array.isArray(inline) || inline.length === 0) return null;
    const lines = inline.map((r) =>
      isObject(r) && isObject(r.metadata) ? { key: r.metadata.key, ...r } : r,
    );
    if (!lines.every((l) => isObject(l) && typeof l.key === "string")) return null;
    const bytes = (async function* () {
      for (const l of lines) yield Buffer.from(`${JSON.stringify(l)}\n`);
    })();
    merged = await mergeResults(order, [{ name: "inline responses", bytes, read: readGeminiResultLine }]);
  }
  return { output: { items: merged.items }, usage: merged.usage };
}

/**
 * One line of a Gemini responses file as an item: `{key, response}` (a
 * GenerateContentResponse, its usage from `usageMetadata`) is `succeeded`, `{key, error}`
 * (a google.rpc.Status) `failed`.
 */
export function readGeminiResultLine(value: unknown): ResultItem | string {
  if (!isObject(value)) return "not a JSON object";
  const { key, response, error } = value;
  if (typeof key !== "string" || key === "") return "no key";
  if (isObject(error)) {
    const code =
      typeof error.status === "string" ? error.status : String(error.code ?? "batch_request_failed");
    const message =
      typeof error.message === "string" && error.message !== "" ? error.message : "the request failed";
    return { custom_id: key, status: "failed", error: { code, message } };
  }
  if (isObject(response)) {
    const usage = itemUsage(response.usageMetadata);
    return { custom_id: key, status: "succeeded", output: response, ...(usage ? { usage } : {}) };
  }
  return "neither a response nor an error";
}

/** The keys of a batch's inline requests (`inputConfig.requests.requests[].metadata.key`), when all have one. */
function inputKeys(inputConfig: unknown): string[] | null {
  const requests =
    isObject(inputConfig) && isObject(inputConfig.requests) ? inputConfig.requests.requests : undefined;
  if (!Array.isArray(requests) || requests.length === 0) return null;
  const keys: string[] = [];
  for (const r of requests) {
    const key = isObject(r) && isObject(r.metadata) ? r.metadata.key : undefined;
    if (typeof key !== "string") return null;
    keys.push(key);
  }
  return keys;
}
