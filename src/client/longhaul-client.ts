import { SseParser } from "./sse-parser.ts";
import type {
  ApprovalNotification,
  BulkRerunRequest,
  BulkRerunResult,
  EventSink,
  RerunResult,
  SearchAnswer,
  SearchRequest,
  SignalResult,
  SubmitBatchItem,
  SubmitBatchResult,
  SubmitResult,
  TaskDetail,
  TaskEvent,
  TaskPage,
  TaskStatus,
  WebhookDelivery,
  WebhookEndpoint,
} from "./types.ts";

/** An HTTP error of the API (`status`, stable `code`), or a failure to reach it (`status` 0). */
export class LonghaulClientError extends Error {
  override readonly name = "LonghaulClientError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface LonghaulClientOptions {
  /** Where the API is, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string;
  apiKey: string;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
  /** Reconnection of `subscribe`: first delay (the server's `retry` wins) and the ceiling. */
  reconnect?: { initialMs?: number; maxMs?: number };
}

export interface SubscribeOptions {
  /** Only this task's events; without `lastEventId` they start at the task's first event. */
  taskId?: string;
  /** Resume right after this event (its `seq`). Without it, the stream starts at the next event. */
  lastEventId?: number | string;
  /** Ends the iteration. */
  signal?: AbortSignal;
}

/**
 * What a task type (`typeof myTask`, made by `task()` or `defineTask`) takes as input when
 * submitted; any other type is the input type itself. Read from the task type's shape, so the
 * client imports nothing of the server.
 */
export type SubmitInput<T> = T extends {
  readonly name: string;
  readonly run: (...args: never[]) => unknown;
  readonly "~types"?: { readonly input: infer I } | undefined;
}
  ? I
  : T;

const RETRIABLE = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * A typed client of the longhaul API. Every method throws `LonghaulClientError` on a non-2xx
 * answer, with the API's error `code` and message.
 */
export class LonghaulClient {
  private readonly base: string;
  private readonly key: string;
  private readonly fetchFn: typeof fetch;
  private readonly initialMs: number;
  private readonly maxMs: number;

  constructor(opts: LonghaulClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, "");
    this.key = opts.apiKey;
    this.fetchFn = opts.fetch ?? ((input, init) => fetch(input, init));
    this.initialMs = opts.reconnect?.initialMs ?? 1000;
    this.maxMs = opts.reconnect?.maxMs ?? 30_000;
  }

  /**
   * Submits a task; the same `clientRequestId` again returns the same task (`created: false`).
   * `submit<typeof summarize>("summarize", input)` checks `input` against that task type's
   * input (its schema's input); `submit<{ text: string }>(…)` against the type given.
   */
  submit<T = unknown>(
    type: string,
    input: SubmitInput<T>,
    opts: { clientRequestId?: string; userId?: string; traceId?: string } = {},
  ): Promise<SubmitResult> {
    return this.call("POST", "/v1/tasks", {
      type,
      input,
      ...(opts.clientRequestId === undefined ? {} : { client_request_id: opts.clientRequestId }),
      ...(opts.userId === undefined ? {} : { user_id: opts.userId }),
      ...(opts.traceId === undefined ? {} : { trace_id: opts.traceId }),
    });
  }

  /**
   * Submits 1 to 1,000 tasks all or nothing (`POST /v1/tasks/batch`): one bad item refuses the
   * batch with its index in `param`, and nothing is stored. The answers keep the order given;
   * an item whose `clientRequestId` was used before answers that task (`created: false`).
   */
  submitBatch(tasks: readonly SubmitBatchItem[]): Promise<SubmitBatchResult> {
    return this.call("POST", "/v1/tasks/batch", {
      tasks: tasks.map((t) => ({
        type: t.type,
        ...(t.input === undefined ? {} : { input: t.input }),
        ...(t.clientRequestId === undefined ? {} : { client_request_id: t.clientRequestId }),
        ...(t.userId === undefined ? {} : { user_id: t.userId }),
        ...(t.traceId === undefined ? {} : { trace_id: t.traceId }),
      })),
    });
  }

  /**
   * A task with its steps and jobs. A value the server answers as a link (`output_url`,
   * `input_url`, a step's `output_url`: kept in its blob store and too large to answer inline)
   * is downloaded and put in its place, so `output` is the value whatever its size; the link is
   * kept beside it. `{ follow: false }` leaves such values `null`, for the caller to fetch.
   */
  async get<I = unknown, O = unknown>(
    taskId: string,
    opts: { follow?: boolean } = {},
  ): Promise<TaskDetail<I, O>> {
    const task = await this.call<TaskDetail<I, O>>("GET", `/v1/tasks/${encodeURIComponent(taskId)}`);
    if (opts.follow === false) return task;
    if (task.input_url !== undefined) task.input = (await this.download(task.input_url)) as I;
    if (task.output_url !== undefined) task.output = (await this.download(task.output_url)) as O;
    for (const step of task.steps) {
      if (step.output_url !== undefined) step.output = await this.download(step.output_url);
    }
    return task;
  }

  /** A value behind one of the API's signed links; the link carries its own token, not the key. */
  private download(url: string): Promise<unknown> {
    return this.request<unknown>("GET", new URL(url, `${this.base}/`).href, undefined, false);
  }

  /** A page of tasks, newest first; pass `next_cursor` back as `cursor` for the next one. */
  list(q: { status?: TaskStatus; type?: string; limit?: number; cursor?: string } = {}): Promise<TaskPage> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return this.call("GET", `/v1/tasks${qs ? `?${qs}` : ""}`);
  }

  cancel(taskId: string): Promise<{ task_id: string; status: TaskStatus }> {
    return this.call("POST", `/v1/tasks/${encodeURIComponent(taskId)}/cancel`);
  }

  /**
   * Re-runs a failed, canceled or timed-out task as a new task, from its failed step (the steps
   * before it reused) or `from: "start"`; the same `clientRequestId` again returns the same re-run.
   */
  rerun(
    taskId: string,
    opts: { from?: "failed_step" | "start"; clientRequestId?: string } = {},
  ): Promise<RerunResult> {
    return this.call("POST", `/v1/tasks/${encodeURIComponent(taskId)}/rerun`, {
      ...(opts.from === undefined ? {} : { from: opts.from }),
      ...(opts.clientRequestId === undefined ? {} : { client_request_id: opts.clientRequestId }),
    });
  }

  /** Re-runs the tasks a filter matches (at most `limit`), or with `dry_run` only names them. */
  rerunMany(request: BulkRerunRequest): Promise<BulkRerunResult> {
    return this.call("POST", "/v1/tasks/rerun", request);
  }

  /** Approves through an approval link (`approval_url` or an `approve_url` of a waiting step). */
  approve(
    approvalUrl: string,
    opts: { comment?: string; approver?: string } = {},
  ): Promise<{ accepted: true; task_id: string; step_id: string; decision: "approve" }> {
    return this.capability(approvalUrl, { decision: "approve", ...opts });
  }

  /** Rejects through an approval link (`approval_url` or a `reject_url` of a waiting step). */
  reject(
    rejectUrl: string,
    opts: { comment?: string; approver?: string } = {},
  ): Promise<{ accepted: true; task_id: string; step_id: string; decision: "reject" }> {
    return this.capability(rejectUrl, { decision: "reject", ...opts });
  }

  /**
   * Answers a `step.callback` by posting `result` to its callback URL. Posting the same result
   * again (a retry) answers the same, with `duplicate: true`.
   */
  callback(
    callbackUrl: string,
    result: unknown,
  ): Promise<{ accepted: true; task_id: string; step_id: string; duplicate?: true }> {
    return this.capability(callbackUrl, result);
  }

  /** Sends a signal; it ends every waiting `step.waitForEvent` it matches. `id` makes it idempotent. */
  signal(name: string, data?: unknown, opts: { id?: string } = {}): Promise<SignalResult> {
    return this.call("POST", "/v1/signals", {
      name,
      data: data ?? null,
      ...(opts.id === undefined ? {} : { id: opts.id }),
    });
  }

  /**
   * Searches the tenant's indexed chunks (`POST /v1/search`), best first: `mode` `vector`,
   * `keyword` or `hybrid` (default), `k` 1 to 100 (default 10), `filter` by task, task type,
   * file or metadata.
   */
  search(query: string, opts: Omit<SearchRequest, "query"> = {}): Promise<SearchAnswer> {
    return this.call("POST", "/v1/search", { ...opts, query });
  }

  /** Registers an outbound webhook endpoint; the `secret` (to verify deliveries) is shown only here. */
  createWebhookEndpoint(url: string, events?: string[]): Promise<WebhookEndpoint & { secret: string }> {
    return this.call("POST", "/v1/webhook-endpoints", { url, ...(events ? { events } : {}) });
  }

  async listWebhookEndpoints(): Promise<WebhookEndpoint[]> {
    return (await this.call<{ data: WebhookEndpoint[] }>("GET", "/v1/webhook-endpoints")).data;
  }

  deleteWebhookEndpoint(id: string): Promise<void> {
    return this.call("DELETE", `/v1/webhook-endpoints/${encodeURIComponent(id)}`);
  }

  webhookDeliveries(
    endpointId: string,
    q: { state?: WebhookDelivery["state"]; limit?: number; cursor?: string } = {},
  ): Promise<{ data: WebhookDelivery[]; next_cursor: string | null }> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return this.call(
      "GET",
      `/v1/webhook-endpoints/${encodeURIComponent(endpointId)}/deliveries${qs ? `?${qs}` : ""}`,
    );
  }

  /**
   * A new signing secret for an endpoint, shown only here. The old secret keeps signing next
   * to it for `expirePreviousInS` seconds (default a day), and earlier ones until their own
   * expiry; 0 stops them all at once. 409 LIMIT_REACHED while five earlier secrets still sign.
   */
  rotateWebhookEndpointSecret(
    id: string,
    opts: { expirePreviousInS?: number } = {},
  ): Promise<WebhookEndpoint & { secret: string }> {
    return this.call(
      "POST",
      `/v1/webhook-endpoints/${encodeURIComponent(id)}/rotate-secret`,
      opts.expirePreviousInS === undefined ? {} : { expire_previous_in_s: opts.expirePreviousInS },
    );
  }

  replayWebhookDelivery(endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
    return this.call(
      "POST",
      `/v1/webhook-endpoints/${encodeURIComponent(endpointId)}/deliveries/${encodeURIComponent(deliveryId)}/replay`,
    );
  }

  /**
   * Adds an event sink: task events published to NATS JetStream (`subject`), RabbitMQ
   * (`exchange`) or Redis Streams (`stream`). The URL, credentials included, is kept sealed
   * and never shown again; answers carry it without credentials.
   */
  createEventSink(sink: {
    kind: EventSink["kind"];
    url: string;
    subject?: string;
    exchange?: string;
    stream?: string;
    events?: string[];
  }): Promise<EventSink> {
    return this.call("POST", "/v1/sinks", sink);
  }

  async listEventSinks(): Promise<EventSink[]> {
    return (await this.call<{ data: EventSink[] }>("GET", "/v1/sinks")).data;
  }

  deleteEventSink(id: string): Promise<void> {
    return this.call("DELETE", `/v1/sinks/${encodeURIComponent(id)}`);
  }

  eventSinkDeliveries(
    sinkId: string,
    q: { state?: WebhookDelivery["state"]; limit?: number; cursor?: string } = {},
  ): Promise<{ data: WebhookDelivery[]; next_cursor: string | null }> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return this.call("GET", `/v1/sinks/${encodeURIComponent(sinkId)}/deliveries${qs ? `?${qs}` : ""}`);
  }

  replayEventSinkDelivery(sinkId: string, deliveryId: string): Promise<WebhookDelivery> {
    return this.call(
      "POST",
      `/v1/sinks/${encodeURIComponent(sinkId)}/deliveries/${encodeURIComponent(deliveryId)}/replay`,
    );
  }

  /** Sends a dead approval message again (`notifications[].id` of an approval step), its retry schedule from the start. */
  replayNotification(taskId: string, notificationId: string): Promise<ApprovalNotification> {
    return this.call(
      "POST",
      `/v1/tasks/${encodeURIComponent(taskId)}/notifications/${encodeURIComponent(notificationId)}/replay`,
    );
  }

  /**
   * The tenant's task events as they commit (`GET /v1/events`). When the connection drops,
   * it reconnects with backoff and resumes with `Last-Event-ID`, so no event is skipped and
   * none is yielded twice. Ends when `signal` aborts or the loop breaks; throws on an answer
   * that a retry cannot fix (a bad key, an unknown task).
   */
  subscribe<D = unknown>(opts: SubscribeOptions = {}): AsyncIterableIterator<TaskEvent<D>> {
    return this.events<D>(opts);
  }

  private async *events<D>(opts: SubscribeOptions): AsyncIterableIterator<TaskEvent<D>> {
    let lastId = opts.lastEventId === undefined ? null : String(opts.lastEventId);
    let lastSeq = lastId !== null && /^\d+$/.test(lastId) ? Number(lastId) : -1;
    let failures = 0;
    let serverRetry: number | null = null;
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    opts.signal?.addEventListener("abort", onAbort);
    if (opts.signal?.aborted) stop.abort();
    try {
      while (!stop.signal.aborted) {
        const url = `${this.base}/v1/events${opts.taskId ? `?task_id=${encodeURIComponent(opts.taskId)}` : ""}`;
        let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
        try {
          const res = await this.fetchFn(url, {
            headers: {
              accept: "text/event-stream",
              authorization: `Bearer ${this.key}`,
              ...(lastId === null ? {} : { "last-event-id": lastId }),
            },
            signal: stop.signal,
          });
          if (!res.ok) {
            const err = await errorOf(res);
            if (!RETRIABLE.has(res.status)) throw err;
            throw Object.assign(err, { retriable: true });
          }
          if (!res.body || !res.headers.get("content-type")?.startsWith("text/event-stream")) {
            throw new LonghaulClientError(
              res.status,
              "NOT_AN_EVENT_STREAM",
              `${url} did not answer with an event stream.`,
            );
          }
          failures = 0;
          reader = res.body.getReader();
          const parser = new SseParser();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            for (const m of parser.push(value)) {
              const event = parseEvent<D>(m.data);
              // Seqs only grow: one at or below the last yielded was seen before a reconnect.
              if (!event || event.seq <= lastSeq) continue;
              lastSeq = event.seq;
              yield event;
            }
            // Also moved by an id with no data: the server names the stream's start that way.
            lastId = parser.lastEventId || lastId;
            serverRetry = parser.retry ?? serverRetry;
          }
        } catch (err) {
          if (stop.signal.aborted) return;
          if (err instanceof LonghaulClientError && !(err as { retriable?: boolean }).retriable) throw err;
        } finally {
          reader?.cancel().catch(() => {});
        }
        // The stream ended or broke: wait, then resume after the last event seen.
        const base = serverRetry ?? this.initialMs;
        const ceiling = Math.min(this.maxMs, base * 2 ** failures);
        failures++;
        await sleep(ceiling / 2 + (Math.random() * ceiling) / 2, stop.signal);
      }
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      stop.abort();
    }
  }

  /** Capability URLs carry their own authority: the API key is never sent to them. */
  private capability<T>(url: string, body: unknown): Promise<T> {
    return this.request<T>("POST", new URL(url, `${this.base}/`).href, body, false);
  }

  private call<T>(method: string, path: string, body?: unknown): Promise<T> {
    return this.request<T>(method, this.base + path, body, true);
  }

  private async request<T>(method: string, url: string, body: unknown, withKey: boolean): Promise<T> {
    let res: Response;
    try {
      res = await this.fetchFn(url, {
        method,
        headers: {
          accept: "application/json",
          ...(withKey ? { authorization: `Bearer ${this.key}` } : {}),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (err) {
      throw new LonghaulClientError(0, "NETWORK_ERROR", `Could not reach ${url}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (!res.ok) throw await errorOf(res);
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

function parseEvent<D>(data: string): TaskEvent<D> | null {
  try {
    const e = JSON.parse(data) as TaskEvent<D>;
    return typeof e?.seq === "number" ? e : null;
  } catch {
    return null;
  }
}

async function errorOf(res: Response): Promise<LonghaulClientError> {
  const text = await res.text().catch(() => "");
  try {
    const e = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error;
    if (e && typeof e.code === "string") {
      return new LonghaulClientError(res.status, e.code, typeof e.message === "string" ? e.message : e.code);
    }
  } catch {
    // Not the API's error shape: report the status and the start of the body below.
  }
  return new LonghaulClientError(res.status, `HTTP_${res.status}`, text.slice(0, 200) || res.statusText);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}
