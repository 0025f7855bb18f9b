import { LonghaulError } from "../core/errors.ts";
import type { JobStatus } from "../core/job.ts";
import { type Download, downloadClient } from "./download-client.ts";
import { isObject, type JsonRequest, jsonClient } from "./json-client.ts";
import { type JobSnapshot, type Provider, ProviderError } from "./provider.ts";

/**
 * What the REST adapters (`sim`, `http`, `openai`, `gemini`) share beyond the HTTP client:
 * their options when keyed by an API key, their refusals, the start of every status read,
 * a result read from a snapshot, and a cancel that tolerates an ended job.
 */

/** Throws a refusal that says why; typed `never` so a check reads `return fail("…")`. */
export type Fail = (why: string) => never;

/** The options of an adapter whose service is reached with an API key (OpenAI, Gemini). */
export interface ApiKeyOptions {
  /** The provider's name in the engine; default the service's own (`openai`, `gemini`). */
  name?: string;
  /** Default the service's public API. */
  baseUrl?: string;
  apiKey: string;
  fetchImpl?: typeof fetch;
  /** Per request; default 30 s. */
  timeoutMs?: number;
}

/**
 * The provider's name and its HTTP client, once `options.apiKey` is known to be set
 * (`CONFIG_INVALID` naming `service.key` otherwise). `service.headers` carries the key.
 */
export function apiKeyClient(
  options: ApiKeyOptions,
  service: {
    name: string;
    baseUrl: string;
    key: string;
    headers: (apiKey: string) => Record<string, string>;
  },
): { name: string; request: JsonRequest; download: Download } {
  const name = options.name ?? service.name;
  if (typeof options.apiKey !== "string" || options.apiKey === "") {
    throw new LonghaulError("CONFIG_INVALID", `Provider "${name}" needs ${service.key} (apiKey).`);
  }
  const client = {
    name,
    baseUrl: options.baseUrl ?? service.baseUrl,
    headers: service.headers(options.apiKey),
    ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}),
    timeoutMs: options.timeoutMs ?? 30_000,
  };
  return { name, request: jsonClient(client), download: downloadClient(client) };
}

/** `${name}: could not ${what}: ${why}.` as a `ProviderError` that retrying will not help. */
export function refusal(name: string, what: string): Fail {
  return (why) => {
    throw new ProviderError(`${name}: could not ${what}: ${why}.`, { retriable: false });
  };
}

/** A create answered with `status` but no job id, said as `carried no ${missing}`. */
export function noJobId(name: string, what: string, status: number, missing: string): never {
  throw new ProviderError(`${name}: could not ${what}: HTTP ${status} carried no ${missing}.`, {
    retriable: false,
    status,
  });
}

/**
 * The start of reading a job's state from a service's object: `body` must be a JSON object
 * whose `status` `statuses` names (compared in lower case when `read.anyCase`); otherwise
 * `fail` says "`read.object` is not a JSON object" or "unknown `read.status` …". Returns the
 * object and a snapshot holding the status, for the caller to add output, error and usage.
 */
/**
 * The status a service's word names in `statuses`, or undefined. Only the table's own keys
 * count: a service answering "constructor" or "__proto__" names no status.
 */
export function statusNamed(
  statuses: Record<string, JobStatus>,
  said: unknown,
  anyCase = true,
): JobStatus | undefined {
  if (typeof said !== "string") return undefined;
  const key = anyCase ? said.toLowerCase() : said;
  return Object.hasOwn(statuses, key) ? statuses[key] : undefined;
}

export function statusSnapshot(
  jobId: string,
  body: unknown,
  statuses: Record<string, JobStatus>,
  fail: Fail,
  read: { object: string; status: string; anyCase?: boolean },
): { object: Record<string, unknown>; snapshot: JobSnapshot } {
  if (!isObject(body)) return fail(`${read.object} is not a JSON object`);
  const said = body.status;
  const status = statusNamed(statuses, said, read.anyCase === true);
  if (status === undefined) return fail(`unknown ${read.status} ${JSON.stringify(said)}`);
  return { object: body, snapshot: { jobId, status } };
}

/**
 * `status` and `fetchResult` of an adapter that reads a job as `snapshot(jobId, what)`, `what`
 * completing "could not …". `fetchResult` gives the output of a job that succeeded; otherwise
 * a `ProviderError` naming its state (and error), retriable while the job still runs.
 */
export function snapshotReads(
  name: string,
  snapshot: (jobId: string, what: string) => Promise<JobSnapshot>,
): Required<Pick<Provider, "status" | "fetchResult">> {
  return {
    status: (jobId) => snapshot(jobId, `read the status of ${jobId}`),
    async fetchResult(jobId) {
      const what = `fetch the result of ${jobId}`;
      const s = await snapshot(jobId, what);
      if (s.status === "succeeded") return { output: s.output ?? null, usage: s.usage };
      return notEnded(name, what, s);
    },
  };
}

/** The refusal of a result read for a job that did not succeed: retriable while it still runs. */
export function notEnded(name: string, what: string, s: JobSnapshot): never {
  const running = s.status === "running" || s.status === "created";
  throw new ProviderError(
    `${name}: could not ${what}: it is ${s.status}${s.error ? ` (${s.error.message})` : ""}` +
      `${running ? "; ask again later" : ", so there is no result"}.`,
    { retriable: running },
  );
}

/** `POST path` to cancel a job; a 409 means the job had already ended, so there is nothing to cancel. */
export async function cancelJob(request: JsonRequest, what: string, path: string): Promise<void> {
  try {
    await request(what, "POST", path);
  } catch (err) {
    if (err instanceof ProviderError && err.status === 409) return;
    throw err;
  }
}
