import { LonghaulError } from "../../core/errors.ts";
import type { JobEventType, JobStatus } from "../../core/job.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import { parseBriefEvent, parseUsage } from "../brief-event.ts";
import { isObject, jsonClient, segment } from "../json-client.ts";
import {
  type CreatedJob,
  type CreateJobRequest,
  type JobSnapshot,
  type Provider,
  ProviderError,
} from "../provider.ts";
import { cancelJob, noJobId, refusal, statusNamed, statusSnapshot } from "../rest-adapter.ts";

export interface HttpProviderOptions {
  /** The provider's name in the engine, as sources name it. */
  name: string;
  baseUrl: string;
  /** Where jobs are created; default `/jobs`. */
  createPath?: string;
  /** A job's state, `{id}` standing for the job id, e.g. `/jobs/{id}`. Without it there is no `status`. */
  statusPath?: string;
  /** Cancels a job, e.g. `/jobs/{id}/cancel`. Without it there is no `cancel`. */
  cancelPath?: string;
  /** Sent with every request, e.g. `{ authorization: "Bearer …" }`. */
  headers?: Record<string, string>;
  fetchImpl?: typeof fetch;
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

/** The status words callback services use, as the engine names job states. */
const statuses: Record<string, JobStatus> = {
  queued: "created",
  pending: "created",
  created: "created",
  accepted: "created",
  running: "running",
  in_progress: "running",
  processing: "running",
  succeeded: "succeeded",
  completed: "succeeded",
  done: "succeeded",
  failed: "failed",
  error: "failed",
  canceled: "canceled",
  cancelled: "canceled",
};

const eventOfStatus: Record<JobStatus, JobEventType | undefined> = {
  pending: undefined,
  created: "job.created",
  running: "job.running",
  succeeded: "job.succeeded",
  failed: "job.failed",
  canceled: "job.canceled",
  timed_out: undefined,
};

/**
 * The `Provider` for any service that takes a callback URL (the OCR service of the brief).
 * `create` POSTs `{input, callback_url, idempotency_key}` with `Idempotency-Key` and reads
 * `{job_id}` or `{id}`. Callbacks may be in the provider event shape `{id, type, data}` or the
 * plain `{job_id, status, result?, error?}`.
 */
export function httpProvider(options: HttpProviderOptions): Provider {
  const { name } = options;
  if (typeof name !== "string" || name === "") {
    throw new LonghaulError("CONFIG_INVALID", "An http provider needs a name.");
  }
  const request = jsonClient({
    name,
    baseUrl: options.baseUrl,
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}),
    timeoutMs: options.timeoutMs ?? 10_000,
  });
  const createPath = options.createPath ?? "/jobs";
  const jobPath = (template: string, jobId: string) => template.replaceAll("{id}", segment(jobId));

  async function snapshot(statusPath: string, jobId: string, what: string): Promise<JobSnapshot> {
    const answer = await request(what, "GET", jobPath(statusPath, jobId));
    const fail = refusal(name, what);
    const { object: body, snapshot: s } = statusSnapshot(jobId, answer.body, statuses, fail, {
      object: "the answer",
      status: "status",
      anyCase: true,
    });
    const output = body.output ?? body.result;
    if (output !== undefined) s.output = output;
    if (body.error !== undefined && body.error !== null) s.error = parseError(body.error, fail);
    if (body.usage !== undefined) s.usage = parseUsage(body.usage, fail);
    return s;
  }

  const provider: Provider = {
    name,

    async create(req: CreateJobRequest): Promise<CreatedJob> {
      const what = `create the job of step ${req.stepId} of task ${req.taskId}`;
      const { status, body } = await request(what, "POST", createPath, {
        body: { input: req.input, callback_url: req.webhookUrl, idempotency_key: req.idempotencyKey },
        headers: { "idempotency-key": req.idempotencyKey },
      });
      const id = isObject(body) ? (body.job_id ?? body.id) : undefined;
      if ((typeof id !== "string" && typeof id !== "number") || id === "") {
        return noJobId(name, what, status, "job_id or id");
      }
      const said = isObject(body) ? statusNamed(statuses, body.status) : undefined;
      return { jobId: String(id), status: said === "running" ? "running" : "created" };
    },

    parseEvent(body: unknown): ProviderEvent {
      return parseHttpEvent(name, body);
    },
  };

  const { statusPath, cancelPath } = options;
  if (statusPath) {
    provider.status = (jobId) => snapshot(statusPath, jobId, `read the status of job ${jobId}`);
    provider.fetchResult = async (jobId) => {
      const what = `fetch the result of job ${jobId}`;
      const s = await snapshot(statusPath, jobId, what);
      if (s.status === "succeeded") return { output: s.output ?? null, usage: s.usage };
      const running = s.status === "running" || s.status === "created";
      throw new ProviderError(`${name}: could not ${what}: it is ${s.status}.`, { retriable: running });
    };
  }
  if (cancelPath) {
    provider.cancel = (jobId) => cancelJob(request, `cancel job ${jobId}`, jobPath(cancelPath, jobId));
  }
  return provider;
}

/**
 * `{id, type: "job.*", data: {job_id, output?, error?, usage?}}`, or the plain callback
 * `{job_id, status, result? | output?, error?, usage?}` whose event id is `id` when given and
 * `job_id:status` otherwise (a service that calls back twice for one state is one event).
 */
export function parseHttpEvent(name: string, body: unknown): ProviderEvent {
  const invalid = (why: string): never => {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `The ${name} callback is neither {id, type, data: {job_id}} nor {job_id, status}: ${why}. Check what posts to this source.`,
    );
  };
  if (!isObject(body)) return invalid("the body is not a JSON object");
  const id = body.id;
  if (id !== undefined && (typeof id !== "string" || id === ""))
    return invalid("id must be a non-empty string");

  if (body.type !== undefined) return parseBriefEvent(body, `${name} callback`);

  const jobId = jobIdOf(body.job_id, invalid, "job_id");
  const status = statusNamed(statuses, body.status);
  const type = status === undefined ? undefined : eventOfStatus[status];
  if (type === undefined) {
    return invalid(
      `status must be one of ${Object.keys(statuses).join(", ")}, not ${JSON.stringify(body.status)}`,
    );
  }
  const eventId = typeof id === "string" ? id : `${jobId}:${String(body.status).toLowerCase()}`;
  return withDetails({ eventId, type, jobId }, body.output ?? body.result, body.error, body.usage, invalid);
}

function jobIdOf(value: unknown, invalid: (why: string) => never, field: string): string {
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  if (typeof value !== "string" || value === "") return invalid(`${field} must be a non-empty string`);
  return value;
}

function withDetails(
  event: ProviderEvent,
  output: unknown,
  error: unknown,
  usage: unknown,
  invalid: (why: string) => never,
): ProviderEvent {
  if (output !== undefined) event.output = output;
  if (error !== undefined && error !== null) event.error = parseError(error, invalid);
  if (usage !== undefined) event.usage = parseUsage(usage, invalid);
  return event;
}

/** `{code?, message}`, or a bare message string as plain callbacks often send. */
function parseError(value: unknown, fail: (why: string) => never): { code?: string; message: string } {
  if (typeof value === "string" && value !== "") return { message: value };
  if (!isObject(value) || typeof value.message !== "string")
    return fail("error must be {code?, message} or a string");
  if (value.code !== undefined && typeof value.code !== "string") return fail("error.code must be a string");
  return value.code === undefined ? { message: value.message } : { code: value.code, message: value.message };
}
