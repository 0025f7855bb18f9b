import { isObject } from "../json-client.ts";
import type { Fail } from "../rest-adapter.ts";

/** One request of a batch as `step.batch` sends it. */
export interface BatchRequestLine {
  custom_id: string;
  body: unknown;
}

/** A batch given request by request (`step.batch`'s job input), not as an uploaded file. */
export interface RequestBatch {
  endpoint: string;
  requests: BatchRequestLine[];
}

/**
 * The requests of a `{kind: "batch", endpoint, requests}` input, or null when the input names
 * an uploaded file instead (`input_file_id`, the form that predates `requests`). Checks what
 * the upload needs: an endpoint path, and each request a unique non-empty `custom_id` and a body.
 */
export function requestBatchOf(input: Record<string, unknown>, fail: Fail): RequestBatch | null {
  if (input.requests === undefined) return null;
  if (input.input_file_id !== undefined) return fail("a batch takes requests or input_file_id, not both");
  const { endpoint, requests } = input;
  if (typeof endpoint !== "string" || !endpoint.startsWith("/")) {
    return fail('a batch needs endpoint, a path such as "/v1/responses"');
  }
  if (!Array.isArray(requests) || requests.length === 0) return fail("a batch needs at least one request");
  const seen = new Set<string>();
  for (const [i, r] of requests.entries()) {
    if (!isObject(r) || typeof r.custom_id !== "string" || r.custom_id === "") {
      return fail(`requests[${i}] needs a non-empty custom_id`);
    }
    if (seen.has(r.custom_id)) return fail(`requests[${i}].custom_id "${r.custom_id}" is used twice`);
    seen.add(r.custom_id);
    if (r.body === undefined) return fail(`requests[${i}] needs a body`);
  }
  return { endpoint, requests: requests as BatchRequestLine[] };
}

/**
 * The batch's input file in the Batch API's shape: one `{custom_id, method: "POST", url, body}`
 * per line, in the order of the requests, each line ending in `\n`.
 */
export function batchInputFile(batch: RequestBatch): string {
  let out = "";
  for (const r of batch.requests) {
    out += `${JSON.stringify({ custom_id: r.custom_id, method: "POST", url: batch.endpoint, body: r.body })}\n`;
  }
  return out;
}
