import { LonghaulError } from "../../core/errors.ts";
import type { JobEventType } from "../../core/job.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import { isObject } from "../json-client.ts";

/**
 * The OpenAI webhook events that end a background response or a batch, and the job event
 * each one is. OpenAI sends nothing when such a job starts, so there is no `job.running`.
 */
export const openaiEventTypes: Readonly<Record<string, JobEventType>> = {
  "response.completed": "job.succeeded",
  "response.failed": "job.failed",
  "response.incomplete": "job.failed",
  "response.cancelled": "job.canceled",
  "batch.completed": "job.succeeded",
  "batch.failed": "job.failed",
  // An expired batch may still have answered most of its requests: its result decides
  // (`fetchResult` gives a batch built from requests its items, the rest expired, and fails
  // one built from an uploaded file).
  "batch.expired": "job.succeeded",
  "batch.cancelled": "job.canceled",
};

/**
 * Parses `{id: "evt_…", object: "event", created_at, type, data: {id}}`. The event carries
 * only the object's id, so the result has no output: the worker asks `fetchResult`. Failures
 * carry no reason either; `status` reads it when one is wanted.
 */
export function parseOpenAIEvent(body: unknown): ProviderEvent {
  if (!isObject(body)) return invalid("the body is not a JSON object");
  const { id, type, data } = body;
  if (typeof id !== "string" || id === "") return invalid("id must be a non-empty string");
  if (typeof type !== "string" || type === "") return invalid("type must be a non-empty string");
  const mapped = openaiEventTypes[type];
  if (mapped === undefined) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `The OpenAI event ${id} has type "${type}", which does not end a background response or a batch ` +
        `(handled: ${Object.keys(openaiEventTypes).join(", ")}). Unsubscribe this endpoint from it, or ignore the record.`,
    );
  }
  if (!isObject(data) || typeof data.id !== "string" || data.id === "") {
    return invalid("data.id must be a non-empty string");
  }
  return { eventId: id, type: mapped, jobId: data.id };
}

function invalid(why: string): never {
  throw new LonghaulError(
    "VALIDATION_FAILED",
    `The OpenAI event is not in the webhook shape {id, object: "event", type, data: {id}}: ${why}. Check what posts to this source.`,
  );
}
