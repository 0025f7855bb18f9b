import type { JobStatus } from "../../core/job.ts";
import type { JobUsage } from "../../core/provider-event.ts";
import { isObject } from "../json-client.ts";
import type { JobSnapshot } from "../provider.ts";
import { type Fail, statusSnapshot } from "../rest-adapter.ts";

/**
 * A job id is the resource name Gemini gave: `batches/…` (a batch, read as a long-running
 * operation), `interactions/…` (a background interaction), or any other operation name,
 * e.g. `models/…/operations/…` from `predictLongRunning`.
 */
export function isInteraction(jobId: string): boolean {
  return jobId.startsWith("interactions/");
}

/** `batches/abc` → `/batches/abc`, each segment encoded; a name that could climb out is refused. */
export function namePath(name: string): string | null {
  const parts = name.split("/");
  if (parts.some((p) => p === "" || p === "." || p === "..")) return null;
  return `/${parts.map(encodeURIComponent).join("/")}`;
}

const batchStates: Record<string, JobStatus> = {
  UNSPECIFIED: "running",
  PENDING: "running",
  QUEUED: "running",
  RUNNING: "running",
  SUCCEEDED: "succeeded",
  FAILED: "failed",
  EXPIRED: "failed",
  CANCELLING: "running",
  CANCELLED: "canceled",
};

/** google.rpc.Code 1: an operation cancelled on request ends with this error. */
const RPC_CANCELLED = 1;

/**
 * A long-running operation `{name, metadata, done, error | response}` as the engine sees a
 * job. A batch's operation also carries `metadata.state` (`BATCH_STATE_*`), which wins
 * when present; otherwise `done` and `error` decide.
 */
export function operationSnapshot(jobId: string, body: unknown, fail: Fail): JobSnapshot {
  if (!isObject(body)) return fail("the operation is not a JSON object");
  const metadata = isObject(body.metadata) ? body.metadata : {};
  const rawState = typeof metadata.state === "string" ? metadata.state : undefined;
  const fromState =
    rawState === undefined ? undefined : batchStates[rawState.replace(/^(BATCH|JOB)_STATE_/, "")];
  if (rawState !== undefined && fromState === undefined) return fail(`unknown batch state ${rawState}`);
  const error = isObject(body.error) ? body.error : undefined;
  const done = body.done === true;
  let status: JobStatus;
  if (fromState !== undefined && (fromState !== "running" || !done)) status = fromState;
  else if (!done) status = "running";
  else if (error)
    status = error.code === RPC_CANCELLED || error.status === "CANCELLED" ? "canceled" : "failed";
  else status = "succeeded";

  const snapshot: JobSnapshot = { jobId, status };
  const result = isObject(body.response)
    ? body.response
    : isObject(metadata.output)
      ? metadata.output
      : undefined;
  if (status === "succeeded") snapshot.output = result ? withoutType(result) : null;
  if (status === "failed") {
    snapshot.error = error
      ? rpcError(error)
      : rawState?.endsWith("EXPIRED")
        ? { code: "expired", message: "The batch was not processed before it expired." }
        : { code: "failed", message: "The operation failed." };
  }
  const usage = result ? operationUsage(result) : undefined;
  if (usage) snapshot.usage = usage;
  return snapshot;
}

const interactionStatuses: Record<string, JobStatus> = {
  queued: "running",
  in_progress: "running",
  completed: "succeeded",
  failed: "failed",
  incomplete: "failed",
  budget_exceeded: "failed",
  // The model asks for a client-side function result; a job step cannot give one, so the
  // interaction will not finish by itself.
  requires_action: "failed",
  cancelled: "canceled",
};

/** An Interaction `{id, status, outputs, usage}` as the engine sees a job. */
export function interactionSnapshot(jobId: string, answer: unknown, fail: Fail): JobSnapshot {
  const { object: body, snapshot } = statusSnapshot(jobId, answer, interactionStatuses, fail, {
    object: "the interaction",
    status: "interaction status",
  });
  const { status } = snapshot;
  if (status === "succeeded") snapshot.output = interactionOutput(body.outputs);
  if (status === "failed") {
    snapshot.error = isObject(body.error)
      ? rpcError(body.error)
      : { code: String(body.status), message: `The interaction ended as ${String(body.status)}.` };
  }
  const usage = interactionUsage(body.usage);
  if (usage) snapshot.usage = usage;
  return snapshot;
}

/** The `text` outputs joined; the outputs themselves when there is no text (images, calls). */
function interactionOutput(outputs: unknown): unknown {
  if (!Array.isArray(outputs)) return null;
  const texts = outputs.filter((o) => isObject(o) && o.type === "text" && typeof o.text === "string");
  return texts.length > 0 ? texts.map((o) => (o as { text: string }).text).join("") : outputs;
}

export function rpcError(error: Record<string, unknown>): { code?: string; message: string } {
  const code =
    typeof error.status === "string"
      ? error.status
      : typeof error.code === "string" || typeof error.code === "number"
        ? String(error.code)
        : undefined;
  const message =
    typeof error.message === "string" && error.message !== "" ? error.message : "The job failed.";
  return code === undefined ? { message } : { code, message };
}

function withoutType(value: Record<string, unknown>): Record<string, unknown> {
  const { "@type": _type, ...rest } = value;
  return rest;
}

/**
 * `usageMetadata` of a GenerateContentResponse; for a batch with inlined responses, the sum
 * over them (`inlinedResponses.inlinedResponses[].response.usageMetadata`).
 */
function operationUsage(result: Record<string, unknown>): JobUsage | undefined {
  const direct = usageMetadata(result.usageMetadata);
  if (direct) return direct;
  const inlined = isObject(result.inlinedResponses) ? result.inlinedResponses.inlinedResponses : undefined;
  if (!Array.isArray(inlined)) return undefined;
  const parts = inlined.map((r) =>
    isObject(r) && isObject(r.response) ? usageMetadata(r.response.usageMetadata) : undefined,
  );
  return sumUsage(parts.filter((u): u is JobUsage => u !== undefined));
}

function usageMetadata(value: unknown): JobUsage | undefined {
  return pickCounts(value, [
    ["promptTokenCount", "prompt_tokens"],
    ["candidatesTokenCount", "completion_tokens"],
    ["totalTokenCount", "total_tokens"],
  ]);
}

function interactionUsage(value: unknown): JobUsage | undefined {
  return pickCounts(value, [
    ["total_input_tokens", "prompt_tokens"],
    ["total_output_tokens", "completion_tokens"],
    ["total_tokens", "total_tokens"],
  ]);
}

function pickCounts(value: unknown, pairs: [string, keyof JobUsage][]): JobUsage | undefined {
  if (!isObject(value)) return undefined;
  const usage: JobUsage = {};
  for (const [from, to] of pairs) {
    const n = value[from];
    if (typeof n === "number" && Number.isFinite(n) && n >= 0) usage[to] = n;
  }
  return Object.keys(usage).length > 0 ? usage : undefined;
}

function sumUsage(all: JobUsage[]): JobUsage | undefined {
  if (all.length === 0) return undefined;
  const sum: JobUsage = {};
  for (const u of all) {
    for (const k of ["prompt_tokens", "completion_tokens", "total_tokens"] as const) {
      const n = u[k];
      if (n !== undefined) sum[k] = (sum[k] ?? 0) + n;
    }
  }
  return sum;
}

/** One page of `GET /batches`: each batch's name and display name, and the next page's token. */
export interface BatchPage {
  batches: { name: string; displayName: string | undefined }[];
  nextPageToken: string | undefined;
}

/**
 * A `ListOperationsResponse` `{operations, nextPageToken}` of batch operations, each carrying
 * its `GenerateContentBatch` as `metadata` (`displayName`, `state`, …). JSON omits an empty
 * list and the last page's token, so `{}` is an empty last page. `null` when the body is
 * not that shape.
 */
export function batchPage(body: unknown): BatchPage | null {
  if (!isObject(body)) return null;
  const operations = body.operations ?? [];
  if (!Array.isArray(operations)) return null;
  const batches: BatchPage["batches"] = [];
  for (const op of operations) {
    if (!isObject(op) || typeof op.name !== "string" || op.name === "") continue;
    const metadata = isObject(op.metadata) ? op.metadata : {};
    const displayName = typeof metadata.displayName === "string" ? metadata.displayName : undefined;
    batches.push({ name: op.name, displayName });
  }
  const token = body.nextPageToken;
  return { batches, nextPageToken: typeof token === "string" && token !== "" ? token : undefined };
}
