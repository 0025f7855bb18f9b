import type { ArtifactInfo } from "./artifact.ts";
import type { TaskIndex } from "./chunk.ts";
import type { Duration } from "./duration.ts";
import type { TaskFiles } from "./file-refs.ts";
import type { NotifyEntry } from "./notification.ts";
import type { ReportOptions, ReportSpec } from "./report.ts";
import type { StandardSchemaV1 } from "./standard-schema.ts";
import type { TaskLog } from "./task-log.ts";

/** What a `step.run` callback is given. */
export interface RunContext {
  /** Stable across attempts and replays: pass it to outside systems for exactly-once effects (ARCHITECTURE §3.2). */
  idempotencyKey: string;
  /** 1 on the first attempt. */
  attempt: number;
}

export interface JobOptions {
  /** Provider name, e.g. `"sim"`. */
  provider: string;
  /** The provider's job input. */
  input: unknown;
  /** How long to wait for the job to end before the step times out. */
  timeout?: Duration;
  /** With no terminal webhook by then, the reconciler starts asking the provider (ARCHITECTURE §2). */
  pollAfter?: Duration;
  /** Ask the provider to cancel the job when the step times out. Default true. */
  cancelOnTimeout?: boolean;
  /**
   * The most tokens the job may use, held against the tenant's token budget while it runs.
   * Default: the input's `max_tokens` or `max_output_tokens`, if it has one.
   */
  maxTokens?: number;
}

export interface CallbackOptions {
  /** How long the callback URL lives and the step waits. Default: the deployment's token TTL (48 h). */
  timeout?: Duration;
  /** Also demand this webhook source's signature on the callback (e.g. a provider that signs its calls). */
  verify?: { source: string };
}

/**
 * What an approval asks, whom it tells and how it ends: the options a graph's approval node
 * can set too (`src/graph/node-with.ts`).
 */
export interface ApprovalRequest {
  /** Who may decide; each gets their own links. Empty: one anonymous set of links. */
  approvers?: string[];
  /** Approvals needed (n of m). Default 1; above 1 only with named `approvers`. */
  quorum?: number;
  timeout?: Duration;
  /**
   * At the deadline: reject, approve, resume with a value (`{resume}`, or the older
   * `{default}`), fail the step, or `escalate` once (needs `escalate`; the deadline moves on
   * by its `after`, or by `timeout` again). Without it the step times out.
   */
  onTimeout?: "reject" | "approve" | "fail" | "escalate" | { default: unknown } | { resume: unknown };
  title?: string;
  description?: string;
  /**
   * Task input fields the approval page shows (dotted for nested ones, e.g. `["amount",
   * "customer.name"]`). Anyone holding a link sees the page, so nothing else of the input is shown.
   */
  show?: string[];
  /**
   * With named `approvers`, also hand out a link naming nobody (the step's `approval_url`);
   * its decisions are recorded as `anonymous`, a typed name only as `claimed_by`. Default false:
   * each named approver decides only through their own links.
   */
  allowShared?: boolean;
  /** Let the task's requester (its `user_id`) decide; refused with 403 `SELF_APPROVAL` otherwise. Default false. */
  allowSelfApproval?: boolean;
  /**
   * Where to reach people, told once the links exist: `{channel: "email", to?}`, `{channel:
   * "slack", webhook_url | channel_id}`, `{channel: "wecom", webhook_url}`, `{channel:
   * "webhook", url}`, or the name of a channel configured under `notifiers`. Each named
   * approver gets a message with their own links.
   */
  notify?: NotifyEntry[];
  /** Remind the approvers who have not decided, on the same channels, this long after the request. */
  remindAfter?: Duration;
  /** After `after`, add `to` as approvers and tell them (on `notify`, default the step's). */
  escalate?: { after?: Duration; to: string[]; notify?: NotifyEntry[] };
}

export interface ApprovalOptions extends ApprovalRequest {
  /** The older spelling of `escalate.after`: emit `step.escalated` (and escalate) this long after the request. */
  escalateAfter?: Duration;
  /** The older spelling of `escalate.to`. */
  escalateTo?: string[];
}

export interface ApprovalResult {
  approved: boolean;
  /** A named approver who decided through their own link; null when nobody longhaul knows did. */
  by: string | null;
  /**
   * On an approval without named approvers: the name its link's holder typed. Never checked
   * (anyone holding the link can type any name), so show it as a claim, not as who decided.
   */
  claimed_by?: string;
  comment: string | null;
}

export interface WaitForEventOptions {
  /** Signal name and data fields that must match, e.g. `{ event: "invoice.paid", data: { invoice_id: "inv_1" } }`. */
  match: { event: string; data?: Record<string, unknown> };
  timeout?: Duration;
}

/**
 * What `step.artifact` stores: text (as UTF-8), bytes, or a stream of bytes (a Node `Readable`,
 * a web `ReadableStream` or any async iterable of chunks), read once, as it is written.
 */
export type ArtifactData =
  | string
  | Uint8Array
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array | string>;

export interface ArtifactOptions {
  /** The type it is served with. Default `text/plain; charset=utf-8` for a string, else `application/octet-stream`. */
  contentType?: string;
}

/** One request of a batch: the provider's request body under a caller-chosen id. */
export interface BatchRequest {
  /** Unique within the batch; the item of the result carries it back. */
  custom_id: string;
  /** The body of one call to the batch's endpoint (e.g. a Responses API request). */
  body: unknown;
  /** Default `POST`. */
  method?: string;
}

/** How a request ended in its last round. */
export type BatchItemStatus = "succeeded" | "failed" | "expired";

export interface BatchItem<T = unknown> {
  custom_id: string;
  status: BatchItemStatus;
  output?: T;
  error?: { code: string; message: string };
  usage?: { input_tokens?: number; output_tokens?: number; total_tokens?: number };
  /** The round that gave this answer: 0 for the first batch, n for the n-th resubmission. */
  round: number;
}

export interface BatchOptions {
  /** A provider whose batch jobs end with per-request items (`openai`). */
  provider: string;
  /** The endpoint every request calls, e.g. `/v1/responses`. */
  endpoint: string;
  requests: BatchRequest[];
  /**
   * Resubmit only the requests that ended in one of `on` (default both) as a smaller batch,
   * keeping the others, up to `maxRounds` more batches (0 to 10). Each round is its own job,
   * stored as step `<id>:round-<n>`.
   */
  resubmit?: { maxRounds: number; on?: ("failed" | "expired")[] };
  /** The provider's completion window, default `24h`. */
  completionWindow?: string;
  /** Sent with every round's batch. */
  metadata?: Record<string, string>;
  timeout?: Duration;
  pollAfter?: Duration;
  maxTokens?: number;
}

export interface BatchResult<T = unknown> {
  /** One per request, in the order of `requests`. */
  items: BatchItem<T>[];
  /** How many batches ran: 1 + the resubmissions. */
  rounds: number;
  counts: Record<BatchItemStatus, number>;
  /** Summed over the items' last answers. */
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
}

/** The step API a task function receives. Every call is memoized by its `id`. */
export interface StepApi {
  /** Runs `fn` once; on replay returns its stored outcome. */
  run<T>(id: string, fn: (ctx: RunContext) => T | Promise<T>): Promise<Awaited<T>>;
  /** Dispatches an external job and suspends until it ends; returns its output or throws its failure. */
  job<T = unknown>(id: string, options: JobOptions): Promise<T>;
  /**
   * Mints a signed, expiring callback URL, hands it to `handoff` (which sends it to the
   * outside service), and suspends until the URL is called; returns the posted JSON.
   */
  callback<T = unknown>(
    id: string,
    options?: CallbackOptions,
    handoff?: (url: string) => unknown,
  ): Promise<T>;
  /** Suspends until enough approvers decide (links and a page), or the deadline policy applies. */
  approval(id: string, options?: ApprovalOptions): Promise<ApprovalResult>;
  /**
   * Stores `data` as the task's artifact `name` (1 to 200 characters, no `/` or control
   * character), downloadable at `GET /v1/tasks/:id/artifacts/:name`. A step: its bytes and row
   * are stored before it resolves, and a replay answers the stored artifact without reading
   * `data` again. Each name once per task (`STEP_ID_DUPLICATE` otherwise).
   */
  artifact(name: string, data: ArtifactData, options?: ArtifactOptions): Promise<ArtifactInfo>;
  /**
   * Renders `report` as a PDF (title, summary, key points, sections, sources) and stores it as
   * the task's artifact `options.name` (default `<id>.pdf`, served as `application/pdf`). A step
   * like `step.artifact`: rendered and stored once, and a replay answers the stored artifact
   * without rendering again. A report that is not well formed fails the task (VALIDATION_FAILED).
   */
  report(id: string, report: ReportSpec, options?: ReportOptions): Promise<ArtifactInfo>;
  /**
   * Runs `requests` as a provider batch job (the provider writes and uploads the input file)
   * and suspends until it ends; the result holds one item per request, in order. With
   * `resubmit`, failed or expired requests go out again as smaller batches.
   */
  batch<T = unknown>(id: string, options: BatchOptions): Promise<BatchResult<T>>;
  /** A durable timer: suspends for `duration`. */
  sleep(id: string, duration: Duration): Promise<void>;
  /**
   * Suspends until a matching signal (`POST /v1/signals`) arrives; one that arrived after the
   * task was created counts even if it came first. Returns the signal, or null at the timeout.
   */
  waitForEvent<T = unknown>(
    id: string,
    options: WaitForEventOptions,
  ): Promise<{ name: string; data: T } | null>;
}

/** Which task a run belongs to. */
export interface TaskInfo {
  taskId: string;
  tenantId: string;
  type: string;
  userId: string | null;
  traceId: string | null;
}

/**
 * What a task function is given besides its input and `step`. The engine always sets `log`
 * and `signal`; they are optional here so a context can be made by hand (in tests).
 */
export interface TaskContext extends TaskInfo {
  /**
   * Opens the file references of the input: `{"file_id"}` streamed from the blob store, scoped by
   * the task's tenant; `{"url"}` streamed from the URL (README "Files").
   */
  files?: TaskFiles;
  /**
   * The tenant's search index: `put` replaces the task's chunks, embedded, all at once (README
   * "Search"). Call it inside `step.run`; a run again leaves one copy.
   */
  index?: TaskIndex;
  /** Replay-aware log lines: each is written once, to the task's timeline and the worker's log. */
  log?: TaskLog;
  /** Aborts when the task is canceled while its function runs: pass it to `fetch` and the like. */
  signal?: AbortSignal;
}

/** What a `task()` run function is given: the step API, `log`, `signal` and the task's ids. */
export interface RunArgs extends TaskInfo {
  step: StepApi;
  /**
   * Opens the file references of the input (`{"file_id"}`, `{"url"}`), streamed, a file scoped by
   * the task's tenant; absent on an engine without a blob store.
   */
  files?: TaskFiles;
  /** The tenant's search index: `put` replaces the task's chunks, all at once; absent on an engine without one. */
  index?: TaskIndex;
  /** Replay-aware log lines: each is written once, to the task's timeline and the worker's log. */
  log: TaskLog;
  /** Aborts when the task is canceled while its function runs: pass it to `fetch` and the like. */
  signal: AbortSignal;
}

export type TaskFunction<I = any, O = any> = (input: I, step: StepApi, ctx: TaskContext) => Promise<O>;

/**
 * A task type: a named function the engine runs with replay. `I` is the input the function
 * gets, `O` its output, `In` the input a client submits (the schema's input before it parses).
 */
export interface TaskType<I = any, O = any, In = I> {
  name: string;
  run: TaskFunction<I, O>;
  /** Attempts per `step.run` (and per advance for errors outside steps) before failing. Default 4. */
  maxAttempts?: number;
  /**
   * Validates input at submit time (any Standard Schema: zod, valibot, arktype…). Issues refuse
   * the submit with 400 naming the field; the schema's output is what is stored and run. A
   * schema that throws, takes over `limits.schema_timeout_s` or answers an output JSON cannot
   * carry refuses it with 422 TASK_SCHEMA_FAILED.
   */
  schema?: StandardSchemaV1<In, I>;
  /** Validates input at submit time, after `schema`; throw to refuse it with 400. */
  validate?: (input: unknown) => void;
  /**
   * Check on replay that steps come in the stored order (default true). Off for functions
   * whose parallel branches legitimately reach new steps in varying order, such as graphs.
   */
  strictOrder?: boolean;
  /** Types only, never set: what `client.submit<typeof myTask>` reads the input type from. */
  readonly "~types"?: { readonly input: In; readonly output: O } | undefined;
}

/** What `task()` takes. */
export interface TaskOptions<I, O, S extends StandardSchemaV1 | undefined = undefined> {
  /** The task type's name, as clients submit it. */
  id: string;
  /** Any Standard Schema (zod, valibot, arktype…): checked at submit, its output is the input. */
  schema?: S;
  /** Attempts per `step.run` (and per run for errors outside steps) before the task fails. Default 4. */
  retry?: { maxAttempts?: number };
  /** See `TaskType.strictOrder`. */
  strictOrder?: boolean;
  /** Also checked at submit, after the schema; throw to refuse the input with 400. */
  validate?: (input: unknown) => void;
  run: (input: I, args: RunArgs) => O | Promise<O>;
}

/**
 * Declares a task type:
 * `task({ id: "summarize", schema, retry: { maxAttempts: 3 }, run: async (input, { step, log, signal }) => … })`.
 * With a schema, the input type is the schema's output; a client submits the schema's input.
 */
export function task<S extends StandardSchemaV1, O>(
  options: TaskOptions<StandardSchemaV1.InferOutput<S>, O, S> & { schema: S },
): TaskType<StandardSchemaV1.InferOutput<S>, Awaited<O>, StandardSchemaV1.InferInput<S>>;
export function task<I = unknown, O = unknown>(options: TaskOptions<I, O>): TaskType<I, Awaited<O>>;
export function task(options: TaskOptions<unknown, unknown, StandardSchemaV1 | undefined>): TaskType {
  const { id, schema, retry, strictOrder, validate, run } = options;
  return {
    name: id,
    run: async (input, step, ctx) =>
      run(input, { ...ctx, step, log: ctx.log ?? silentLog, signal: ctx.signal ?? neverAborted }),
    ...(retry?.maxAttempts === undefined ? {} : { maxAttempts: retry.maxAttempts }),
    ...(schema === undefined ? {} : { schema }),
    ...(validate === undefined ? {} : { validate }),
    ...(strictOrder === undefined ? {} : { strictOrder }),
  };
}

const ignore = () => {};
const silentLog: TaskLog = { debug: ignore, info: ignore, warn: ignore, error: ignore };
const neverAborted = new AbortController().signal;

/**
 * Declares a task type the positional way, `defineTask("report", async (input, step, ctx) => …)`:
 * the same task type `task()` makes, the function given `step` and the context apart.
 */
export function defineTask<I = any, O = any>(
  name: string,
  run: TaskFunction<I, O>,
  options: Omit<TaskType<I, O>, "name" | "run" | "~types"> = {},
): TaskType<I, O> {
  const { maxAttempts, ...rest } = options;
  return task<I, O>({
    id: name,
    run: (input, { step, ...ctx }) => run(input as I, step, ctx),
    ...(maxAttempts === undefined ? {} : { retry: { maxAttempts } }),
    ...rest,
  } as TaskOptions<I, O>) as TaskType<I, O>;
}
