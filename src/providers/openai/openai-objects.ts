import type { JobStatus } from "../../core/job.ts";
import type { JobUsage } from "../../core/provider-event.ts";
import { isItemsBatch } from "../batch/openai-batches.ts";
import { isObject } from "../json-client.ts";
import type { JobSnapshot } from "../provider.ts";
import { type Fail, statusSnapshot } from "../rest-adapter.ts";

/** A job id names its kind: the Batch API's ids start with `batch_`, everything else is a response. */
export function isBatchId(jobId: string): boolean {
  return jobId.startsWith("batch_");
}

const responseStatuses: Record<string, JobStatus> = {
  queued: "running",
  in_progress: "running",
  completed: "succeeded",
  failed: "failed",
  incomplete: "failed",
  cancelled: "canceled",
};

/** A Responses API object (`GET /responses/{id}`) as the engine sees a job. */
export function responseSnapshot(jobId: string, answer: unknown, fail: Fail): JobSnapshot {
  const { object: body, snapshot } = statusSnapshot(jobId, answer, responseStatuses, fail, {
    object: "the response object",
    status: "response status",
  });
  if (snapshot.status === "succeeded") snapshot.output = responseOutput(body);
  if (body.status === "failed")
    snapshot.error = apiError(body.error, "response_failed", "The response failed.");
  if (body.status === "incomplete") {
    const reason = isObject(body.incomplete_details) ? body.incomplete_details.reason : undefined;
    snapshot.error = {
      code: "incomplete",
      message: `The response is incomplete${typeof reason === "string" ? ` (${reason})` : ""}.`,
    };
  }
  const usage = tokenUsage(body.usage);
  if (usage) snapshot.usage = usage;
  return snapshot;
}

/**
 * The text the model wrote: `output_text` when the object carries it (the SDKs add it), else
 * the `output_text` parts of the `message` items joined; when there is no text at all
 * (only tool calls, say), the `output` array itself.
 */
export function responseOutput(body: Record<string, unknown>): unknown {
  if (typeof body.output_text === "string") return body.output_text;
  const items = Array.isArray(body.output) ? body.output : [];
  const texts: string[] = [];
  for (const item of items) {
    if (!isObject(item) || item.type !== "message" || !Array.isArray(item.content)) continue;
    for (const part of item.content) {
      if (isObject(part) && part.type === "output_text" && typeof part.text === "string")
        texts.push(part.text);
    }
  }
  return texts.length > 0 ? texts.join("") : (body.output ?? null);
}

const batchStatuses: Record<string, JobStatus> = {
  validating: "running",
  in_progress: "running",
  finalizing: "running",
  cancelling: "running",
  completed: "succeeded",
  failed: "failed",
  expired: "failed",
  cancelled: "canceled",
};

/** A Batch API object (`GET /batches/{id}`) as the engine sees a job. */
export function batchSnapshot(jobId: string, answer: unknown, fail: Fail): JobSnapshot {
  const { object: body, snapshot } = statusSnapshot(jobId, answer, batchStatuses, fail, {
    object: "the batch object",
    status: "batch status",
  });
  // A batch built from requests that expired still has the answers it gave, and its other
  // requests are `expired` items that `step.batch` may resubmit: it ends with its items.
  if (body.status === "expired" && isItemsBatch(body)) return { jobId, status: "succeeded" };
  // A batch built from requests has items for its output, which only `fetchResult` reads
  // (from its files): a snapshot leaves it out, so the reconciler's event asks for it too.
  if (snapshot.status === "succeeded" && !isItemsBatch(body)) {
    snapshot.output = {
      output_file_id: body.output_file_id ?? null,
      error_file_id: body.error_file_id ?? null,
      request_counts: body.request_counts ?? null,
    };
  }
  if (body.status === "failed") snapshot.error = batchErrors(body.errors);
  if (body.status === "expired") {
    snapshot.error = { code: "expired", message: "The batch did not finish within its completion window." };
  }
  const usage = tokenUsage(body.usage);
  if (usage) snapshot.usage = usage;
  return snapshot;
}

/** `{errors: {data: [{code, message, line}]}}`: the first few, since one bad line often repeats. */
function batchErrors(errors: unknown): { code?: string; message: string } {
  const data = isObject(errors) && Array.isArray(errors.data) ? errors.data.filter(isObject) : [];
  const first = data[0];
  if (!first) return { code: "batch_failed", message: "The batch failed." };
  const messages = data.slice(0, 3).map((e) => {
    const line = typeof e.line === "number" ? `line ${e.line}: ` : "";
    return `${line}${typeof e.message === "string" ? e.message : "error"}`;
  });
  const more = data.length > 3 ? ` (and ${data.length - 3} more)` : "";
  return {
    code: typeof first.code === "string" ? first.code : "batch_failed",
    message: `${messages.join("; ")}${more}`,
  };
}

function apiError(value: unknown, code: string, message: string): { code?: string; message: string } {
  if (!isObject(value)) return { code, message };
  return {
    code: typeof value.code === "string" ? value.code : code,
    message: typeof value.message === "string" ? value.message : message,
  };
}

/** `{input_tokens, output_tokens, total_tokens}` (responses and batches alike) as the engine counts. */
export function tokenUsage(value: unknown): JobUsage | undefined {
  if (!isObject(value)) return undefined;
  const usage: JobUsage = {};
  const pairs = [
    ["input_tokens", "prompt_tokens"],
    ["output_tokens", "completion_tokens"],
    ["total_tokens", "total_tokens"],
  ] as const;
  for (const [from, to] of pairs) {
    const n = value[from];
    if (typeof n === "number" && Number.isFinite(n) && n >= 0) usage[to] = n;
  }
  return Object.keys(usage).length > 0 ? usage : undefined;
}
