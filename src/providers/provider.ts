import { brand, isInstance } from "../core/brand.ts";
import type { JobStatus } from "../core/job.ts";
import type { JobUsage, ProviderEvent } from "../core/provider-event.ts";

/** What the engine hands a provider when it dispatches a `step.job`. */
export interface CreateJobRequest {
  input: unknown;
  /** `task_id:step_id`: the provider must return the same job for the same key (ARCHITECTURE §3.7). */
  idempotencyKey: string;
  /** Where the provider should send this job's events. */
  webhookUrl: string;
  tenantId: string;
  taskId: string;
  stepId: string;
}

export interface CreatedJob {
  jobId: string;
  status: JobStatus;
}

export interface JobSnapshot {
  jobId: string;
  status: JobStatus;
  output?: unknown;
  error?: { code?: string; message: string } | undefined;
  usage?: JobUsage | undefined;
}

/**
 * An adapter for an external asynchronous service. `create` must be idempotent by
 * `idempotencyKey`. Errors: throw `ProviderError` with `retriable` set as the provider's
 * answer implies (a 5xx or network failure is retriable, a 4xx is not).
 */
export interface Provider {
  readonly name: string;
  create(req: CreateJobRequest): Promise<CreatedJob>;
  /** Parses a verified webhook body into the brief's event shape; throws on a malformed body. */
  parseEvent(body: unknown): ProviderEvent;
  /** The job's current state, for the reconciler when webhooks do not come (ARCHITECTURE §2). */
  status?(jobId: string): Promise<JobSnapshot>;
  cancel?(jobId: string): Promise<void>;
  /**
   * Provider admission (ARCHITECTURE §4.8): the most tokens this provider may hold enqueued for
   * us per model (`enqueued_tokens` in the config), summed over the jobs it is running. A model
   * absent here has no budget. The model of a job is its input's `model`.
   */
  readonly enqueuedTokens?: Readonly<Record<string, number>>;
  /**
   * For providers whose terminal events carry no result (OpenAI sends only the id): fetches
   * output and usage. The worker calls it before applying a `job.succeeded` without output.
   */
  fetchResult?(
    jobId: string,
    context?: FetchResultContext,
  ): Promise<{ output: unknown; usage?: JobUsage | undefined }>;
}

/**
 * What the engine lends `fetchResult`: where result files are kept. Absent (a caller with no
 * blob store), an adapter reads its result files into memory instead.
 */
export interface FetchResultContext {
  files?: ResultFiles | undefined;
}

/**
 * The part of the deployment's blob store (src/blobs) a provider uses for the result files it
 * downloads. `put` must be atomic: a body that throws midway leaves nothing under the key, so
 * a blob that exists is a whole file. Keys are `/`-separated segments of letters, digits,
 * `.`, `_` and `-` (see `resultFileKey`).
 */
export interface ResultFiles {
  put(key: string, body: AsyncIterable<Uint8Array>): Promise<unknown>;
  get(key: string): Promise<AsyncIterable<Uint8Array>>;
  stat(key: string): Promise<{ size: number } | null>;
}

/** Finds a registered provider by name (the engine's provider registry, or a test's map). */
export interface ProviderLookup {
  find(name: string): Provider | undefined;
}

export class ProviderError extends Error {
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class checked against, maybe a user's subclass
    return isInstance(this, ProviderError, "longhaul:ProviderError", value);
  }
  override readonly name = "ProviderError";
  readonly retriable: boolean;
  readonly status: number | undefined;
  /**
   * The provider is limiting our rate (a 429 such as OpenAI's `rate_limit_exceeded` or Gemini's
   * `RESOURCE_EXHAUSTED`): the request is fine and will pass later. A dispatch parks the job and
   * retries it without counting an attempt (ARCHITECTURE §4.8). Implies `retriable`.
   */
  readonly throttled: boolean;
  /** How long the provider asked us to wait (its `Retry-After`), when it said. */
  readonly retryAfterMs: number | undefined;
  constructor(
    message: string,
    opts: {
      retriable: boolean;
      status?: number;
      cause?: unknown;
      throttled?: boolean;
      retryAfterMs?: number;
    },
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    brand(this, "longhaul:ProviderError");
    this.throttled = opts.throttled ?? false;
    this.retriable = opts.retriable || this.throttled;
    this.status = opts.status;
    this.retryAfterMs = opts.retryAfterMs;
  }
}

/**
 * Thrown by `fetchResult` when the job's result is a failure after all (an OpenAI batch of
 * the `input_file_id` kind that expired): the event is applied as `job.failed` with `failure`,
 * not retried.
 */
export class JobResultFailure extends Error {
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class checked against, maybe a user's subclass
    return isInstance(this, JobResultFailure, "longhaul:JobResultFailure", value);
  }
  override readonly name = "JobResultFailure";
  readonly failure: { code: string; message: string };
  constructor(failure: { code: string; message: string }) {
    super(failure.message);
    brand(this, "longhaul:JobResultFailure");
    this.failure = failure;
  }
}
