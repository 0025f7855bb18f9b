import { LonghaulError } from "../../core/errors.ts";
import type { JobEventType, JobStatus } from "../../core/job.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import { isObject } from "../json-client.ts";
import { operationSnapshot, rpcError } from "./gemini-resources.ts";

/** Gemini webhook event types, the job event each one is, and the prefix of the resource it names. */
export const geminiEventTypes: Readonly<Record<string, { type: JobEventType; family: string }>> = {
  "batch.succeeded": { type: "job.succeeded", family: "batches/" },
  // The Batch API's own word for the end of a batch; the same end as `batch.succeeded`.
  "batch.completed": { type: "job.succeeded", family: "batches/" },
  "batch.failed": { type: "job.failed", family: "batches/" },
  "batch.expired": { type: "job.failed", family: "batches/" },
  "batch.cancelled": { type: "job.canceled", family: "batches/" },
  "interaction.completed": { type: "job.succeeded", family: "interactions/" },
  "interaction.failed": { type: "job.failed", family: "interactions/" },
  "interaction.cancelled": { type: "job.canceled", family: "interactions/" },
  // The model waits for a client-side function result that a job step cannot give.
  "interaction.requires_action": { type: "job.failed", family: "interactions/" },
  "video.generated": { type: "job.succeeded", family: "" },
};

const eventOfStatus: Partial<Record<JobStatus, JobEventType>> = {
  created: "job.created",
  running: "job.running",
  succeeded: "job.succeeded",
  failed: "job.failed",
  canceled: "job.canceled",
};

/**
 * Parses a Gemini webhook body, in any of the forms it arrives in:
 * - the event envelope `{type: "batch.succeeded", data: {id | name, …}}`, which points at
 *   the resource and carries no result: the worker asks `fetchResult`;
 * - a long-running operation `{name, done, error | response, metadata}`, which carries it;
 * - either of those inside a Pub/Sub push envelope `{message: {data: <base64>, messageId}}`.
 */
export function parseGeminiEvent(body: unknown): ProviderEvent {
  if (!isObject(body)) return invalid("the body is not a JSON object");
  if (isObject(body.message) && typeof body.message.data === "string") return fromPubSub(body.message);
  if (typeof body.type === "string") return fromEnvelope(body, body.type);
  if (typeof body.name === "string") return fromOperation(body, body.name);
  return invalid("it has neither a type (webhook event), a name (operation) nor message.data (Pub/Sub push)");
}

function fromPubSub(message: Record<string, unknown>): ProviderEvent {
  let inner: unknown;
  try {
    inner = JSON.parse(Buffer.from(String(message.data), "base64").toString("utf8"));
  } catch {
    return invalid("message.data of the Pub/Sub push is not base64 of a JSON document");
  }
  if (isObject(inner) && isObject(inner.message)) return invalid("a Pub/Sub push inside a Pub/Sub push");
  const event = parseGeminiEvent(inner);
  // Pub/Sub keeps a message's id across redeliveries, so it names the event best.
  const messageId = message.messageId ?? message.message_id;
  return typeof messageId === "string" && messageId !== "" ? { ...event, eventId: messageId } : event;
}

function fromEnvelope(body: Record<string, unknown>, type: string): ProviderEvent {
  const mapped = geminiEventTypes[type];
  if (mapped === undefined) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `The Gemini event has type "${type}", which does not end a batch, an interaction or a video operation ` +
        `(handled: ${Object.keys(geminiEventTypes).join(", ")}). Unsubscribe this endpoint from it, or ignore the record.`,
    );
  }
  const data = body.data;
  if (!isObject(data)) return invalid(`the ${type} event has no data object`);
  const ref = typeof data.name === "string" && data.name !== "" ? data.name : data.id;
  if (typeof ref !== "string" || ref === "")
    return invalid(`data.name or data.id must name the ${type} resource`);
  // The stored job id is the full resource name; a bare id gets its family's prefix.
  const jobId = ref.includes("/") ? ref : `${mapped.family}${ref}`;
  const event: ProviderEvent = {
    eventId: typeof body.id === "string" && body.id !== "" ? body.id : `${jobId}:${type}`,
    type: mapped.type,
    jobId,
  };
  if (mapped.type === "job.failed") event.error = envelopeError(data, type);
  return event;
}

function envelopeError(data: Record<string, unknown>, type: string): { code?: string; message: string } {
  if (isObject(data.error)) return rpcError(data.error);
  // Without a code, the event's own word: `batch.expired` → `expired`, as `status` reports it.
  const code =
    typeof data.error_code === "string" || typeof data.error_code === "number"
      ? String(data.error_code)
      : type.slice(type.indexOf(".") + 1);
  const message =
    typeof data.error_message === "string" && data.error_message !== ""
      ? data.error_message
      : type === "interaction.requires_action"
        ? "The interaction asks for a client-side function result, which a job step cannot give."
        : `Gemini reported ${type}.`;
  return { code, message };
}

function fromOperation(body: Record<string, unknown>, name: string): ProviderEvent {
  if (name === "") return invalid("name must be a non-empty string");
  const snapshot = operationSnapshot(name, body, (why) => invalid(why));
  const type = eventOfStatus[snapshot.status];
  if (type === undefined) return invalid(`the operation is ${snapshot.status}`);
  const event: ProviderEvent = { eventId: `${name}:${snapshot.status}`, type, jobId: name };
  if (snapshot.output !== undefined) event.output = snapshot.output;
  if (snapshot.error) event.error = snapshot.error;
  if (snapshot.usage) event.usage = snapshot.usage;
  return event;
}

function invalid(why: string): never {
  throw new LonghaulError(
    "VALIDATION_FAILED",
    `The Gemini event is not a webhook event {type, data: {id}}, an operation {name, done} or a Pub/Sub push of either: ${why}. Check what posts to this source.`,
  );
}
