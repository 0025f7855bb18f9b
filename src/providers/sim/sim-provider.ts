import { LonghaulError } from "../../core/errors.ts";
import { isJobEventType, type JobStatus, jobEventTypes } from "../../core/job-state.ts";
import {
  type CreatedJob,
  type CreateJobRequest,
  type JobSnapshot,
  type JobUsage,
  type Provider,
  ProviderError,
  type ProviderEvent,
} from "../provider.ts";

export interface SimProviderOptions {
  /** The simulator's base URL, e.g. `http://127.0.0.1:8788`. */
  baseUrl: string;
  /** The provider's name in the engine; default `sim`. */
  name?: string;
  fetchImpl?: typeof fetch;
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

/** The simulator's job statuses, as the engine names job states. */
const statuses: Record<string, JobStatus> = {
  queued: "created",
  running: "running",
  succeeded: "succeeded",
  failed: "failed",
  canceled: "canceled",
};

/**
 * The `Provider` for the simulator's HTTP API. `create` sends the engine's idempotency key
 * as `Idempotency-Key`, so a retried dispatch gets the job created before (DESIGN §3.7).
 * A network failure, a timeout, a 5xx, a 408 or a 429 is a retriable `ProviderError`; any
 * other refusal is not.
 */
export function simProvider(options: SimProviderOptions): Provider {
  const name = options.name ?? "sim";
  const base = options.baseUrl.replace(/\/+$/, "");
  const fetchImpl = options.fetchImpl ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;

  async function request(
    what: string,
    method: "GET" | "POST",
    path: string,
    init: { body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: unknown }> {
    let status: number;
    let text: string;
    try {
      const res = await fetchImpl(`${base}${path}`, {
        method,
        headers: { accept: "application/json", "content-type": "application/json", ...init.headers },
        body: init.body === undefined ? null : JSON.stringify(init.body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = res.status;
      text = await res.text();
    } catch (cause) {
      throw new ProviderError(
        `${name}: could not ${what}: ${errorText(cause)}; the request can be retried.`,
        {
          retriable: true,
          cause,
        },
      );
    }
    let body: unknown;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (status >= 200 && status < 300) return { status, body };
    const retriable = status >= 500 || status === 408 || status === 429;
    throw new ProviderError(
      `${name}: could not ${what}: HTTP ${status}${describe(body)}; ${retriable ? "the request can be retried" : "retrying will not help"}.`,
      { retriable, status },
    );
  }

  return {
    name,

    async create(req: CreateJobRequest): Promise<CreatedJob> {
      const what = `create the job of step ${req.stepId} of task ${req.taskId}`;
      const { status, body } = await request(what, "POST", "/v1/jobs", {
        body: { input: req.input, webhook_url: req.webhookUrl },
        headers: { "idempotency-key": req.idempotencyKey },
      });
      const id = isObject(body) ? body.id : undefined;
      if (typeof id !== "string" || id === "") {
        throw new ProviderError(`${name}: could not ${what}: HTTP ${status} carried no job id.`, {
          retriable: false,
          status,
        });
      }
      return { jobId: id, status: "created" };
    },

    parseEvent(body: unknown): ProviderEvent {
      if (!isObject(body)) return invalid("the body is not a JSON object");
      const { id, type, data } = body;
      if (typeof id !== "string" || id === "") return invalid("id must be a non-empty string");
      if (typeof type !== "string" || !isJobEventType(type)) {
        return invalid(`type must be one of ${Object.keys(jobEventTypes).join(", ")}`);
      }
      if (!isObject(data) || typeof data.job_id !== "string" || data.job_id === "") {
        return invalid("data.job_id must be a non-empty string");
      }
      const event: ProviderEvent = { eventId: id, type, jobId: data.job_id };
      if (data.output !== undefined) event.output = data.output;
      if (data.error !== undefined) event.error = parseError(data.error, invalid);
      if (data.usage !== undefined) event.usage = parseUsage(data.usage, invalid);
      return event;
    },

    async status(jobId: string): Promise<JobSnapshot> {
      const what = `read the status of job ${jobId}`;
      const { body } = await request(what, "GET", `/v1/jobs/${encodeURIComponent(jobId)}`);
      const fail = (why: string): never => {
        throw new ProviderError(`${name}: could not ${what}: ${why}.`, { retriable: false });
      };
      if (!isObject(body)) return fail("the answer is not a JSON object");
      const status = typeof body.status === "string" ? statuses[body.status] : undefined;
      if (status === undefined) return fail(`unknown status ${JSON.stringify(body.status)}`);
      const snapshot: JobSnapshot = { jobId, status };
      if (body.output !== undefined) snapshot.output = body.output;
      if (body.error !== undefined) snapshot.error = parseError(body.error, fail);
      if (body.usage !== undefined) snapshot.usage = parseUsage(body.usage, fail);
      return snapshot;
    },

    async cancel(jobId: string): Promise<void> {
      try {
        await request(`cancel job ${jobId}`, "POST", `/v1/jobs/${encodeURIComponent(jobId)}/cancel`);
      } catch (err) {
        // 409: the job had already ended, so there is nothing left to cancel.
        if (err instanceof ProviderError && err.status === 409) return;
        throw err;
      }
    },
  };
}

function invalid(why: string): never {
  throw new LonghaulError(
    "VALIDATION_FAILED",
    `The sim event is not in the provider event shape {id, type, data: {job_id}}: ${why}. Check what posts to this source.`,
  );
}

function parseError(value: unknown, fail: (why: string) => never): { code?: string; message: string } {
  if (!isObject(value) || typeof value.message !== "string") return fail("error must be {code?, message}");
  if (value.code !== undefined && typeof value.code !== "string") return fail("error.code must be a string");
  return value.code === undefined ? { message: value.message } : { code: value.code, message: value.message };
}

function parseUsage(value: unknown, fail: (why: string) => never): JobUsage {
  if (!isObject(value)) return fail("usage must be an object");
  const usage: JobUsage = {};
  for (const field of ["prompt_tokens", "completion_tokens", "total_tokens"] as const) {
    const n = value[field];
    if (n === undefined) continue;
    if (typeof n !== "number" || !Number.isFinite(n) || n < 0) return fail(`usage.${field} must be a count`);
    usage[field] = n;
  }
  return usage;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(body: unknown): string {
  const error = isObject(body) ? body.error : undefined;
  if (!isObject(error)) return "";
  const code = typeof error.code === "string" ? ` ${error.code}` : "";
  const message = typeof error.message === "string" ? `: ${error.message}` : "";
  return `${code}${message}`;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
