import type { ArtifactRow } from "../core/artifact.ts";
import type { ChunkFilter, ChunkRow, NewChunk } from "../core/chunk.ts";
import type { DeliveryAttemptResult, DeliveryState } from "../core/delivery.ts";
import type { ErrorInfo } from "../core/errors.ts";
import type { FileRow, NewFile } from "../core/file.ts";
import type { JobRow, JobStatus } from "../core/job.ts";
import type { NotificationState, NotifyEntry, NotifyReason } from "../core/notification.ts";
import type { ProviderEvent } from "../core/provider-event.ts";
import type { Quotas, TenantRow } from "../core/quota.ts";
import type { AdvanceResult, RunOutcome } from "../core/replay.ts";
import type { RerunFrom } from "../core/rerun.ts";
import type { SinkKind } from "../core/sink-kind.ts";
import type { StartRequest } from "../core/start-at.ts";
import type { StepRow, StoredStep } from "../core/step.ts";
import type { TaskRow, TaskStatus } from "../core/task.ts";
import type { StatsRows } from "../core/task-stats.ts";
import type {
  ApprovalDecisionRow,
  CallbackAnswer,
  CallbackDelivery,
  DecisionAnswer,
  DecisionChannel,
  WaitRequest,
} from "../core/wait.ts";
import type { WebhookRefusal, WebhookRefusalRow } from "../core/webhook-refusal.ts";
import type { NewWorkItem, WorkItem } from "../core/work-item.ts";
import type { MigrationStatus } from "./migrations.ts";

// The domain's rows and results are defined in core (ARCHITECTURE §5); the store persists them.
export type { ArtifactRow } from "../core/artifact.ts";
export type { DeliveryAttemptResult, DeliveryState } from "../core/delivery.ts";
export type { FileRow, NewFile } from "../core/file.ts";
export type { JobRow } from "../core/job.ts";
export type { TenantRow } from "../core/quota.ts";
export type { AdvanceResult } from "../core/replay.ts";
export type { StepRow } from "../core/step.ts";
export type { TaskRow } from "../core/task.ts";
export type {
  ApprovalDecisionRow,
  CallbackAnswer,
  CallbackDelivery,
  DecisionAnswer,
  WaitAnswer,
} from "../core/wait.ts";
export type { WebhookRefusal, WebhookRefusalRow } from "../core/webhook-refusal.ts";
export type { NewWorkItem, WorkItem, WorkKind } from "../core/work-item.ts";

/** Tenants, their API keys, quotas and usage. */
export interface TenantStore {
  /** Creates a tenant with one API key (given as its hash). */
  createTenant(t: {
    id?: string;
    name: string;
    keyHash: string;
    keyHint?: string;
    quotas?: Quotas;
  }): Promise<TenantRow>;
  /** Creates the tenant if it does not exist, and makes sure `keyHash` is one of its keys. */
  ensureTenant(t: { id: string; name: string; keyHash: string }): Promise<TenantRow>;
  /** The tenant of an active (not revoked) key. */
  tenantByKeyHash(keyHash: string): Promise<TenantRow | null>;
  getTenant(id: string): Promise<TenantRow | null>;
  listTenants(): Promise<TenantRow[]>;
  /** New quotas take effect at once: parked work is woken to re-check them. TENANT_NOT_FOUND. */
  updateTenant(id: string, patch: { name?: string; quotas?: Quotas }): Promise<TenantRow>;
  /** Adds a key (for rotation: the old one keeps working until revoked). Returns its id. */
  addApiKey(tenantId: string, keyHash: string, hint: string): Promise<string>;
  /** KEY_NOT_FOUND. */
  revokeApiKey(tenantId: string, keyId: string): Promise<void>;
  listApiKeys(tenantId: string): Promise<ApiKeyRow[]>;
  /** Tasks by status, jobs running, daily counters for the last `days` days, recent job failures. */
  usage(tenantId: string, days: number): Promise<TenantUsage | null>;
}

/** Tasks: submit, read, list, cancel. */
export interface TaskStore {
  /**
   * Inserts a task, its `task.created` event and its first advance, or returns the task
   * already submitted with the same `(tenant, clientRequestId)` (`created: false`).
   * Fails with IDEMPOTENCY_CONFLICT when that task has another type or input.
   */
  submitTask(t: NewTask): Promise<{ task: TaskRow; created: boolean }>;
  /**
   * Submits tasks as `submitTask` does, all in one transaction: every one is written, or none
   * is (a quota runs out part way, an IDEMPOTENCY_CONFLICT). The answers are in the order given.
   */
  submitTasks(ts: readonly NewTask[]): Promise<{ task: TaskRow; created: boolean }[]>;
  getTask(tenantId: string, taskId: string): Promise<TaskDetail | null>;
  listTasks(tenantId: string, q: TaskQuery): Promise<{ tasks: TaskRow[]; nextCursor: string | null }>;
  /** Cancels a task that has not ended; its waiting steps become canceled. TASK_NOT_FOUND, TASK_NOT_CANCELABLE. */
  cancelTask(tenantId: string, taskId: string): Promise<TaskRow>;
  /**
   * Submits a re-run of a task that failed, was canceled or timed out: a new task of the same
   * type, tenant, user and input, with the old one's reused steps copied (core's
   * `reusedSteps`), or the re-run already made with the same `(tenant, clientRequestId)`
   * (`created: false`). TASK_NOT_FOUND, TASK_NOT_RERUNNABLE, IDEMPOTENCY_CONFLICT.
   */
  rerunTask(r: NewRerun): Promise<{ task: TaskRow; created: boolean; reusedSteps: number }>;
  /** Which of `taskIds` (the tenant's) have been re-run at least once. */
  rerunTaskIds(tenantId: string, taskIds: readonly string[]): Promise<Set<string>>;
}

/** One advance of a task: what it reads, its start, the `step.run` outcomes it stores, its end. */
export interface AdvanceStore {
  /** What an advance needs: the task and its step history, or null if it is gone. */
  loadForAdvance(taskId: string): Promise<{ task: TaskRow; history: StoredStep[] } | null>;
  /** A task's status alone (null if there is none): what a running task function polls for a cancel. */
  taskStatus(taskId: string): Promise<TaskStatus | null>;
  /**
   * Marks a non-terminal task running (first run or resume). `ended`: the task has ended and
   * the item is completed. `parked`: a new task of a tenant at its job limit waits as
   * pending; the item is given back, parked (ARCHITECTURE §4.6).
   */
  beginAdvance(lease: Lease, taskId: string): Promise<"started" | "ended" | "parked">;
  /** Stores one `step.run` outcome. */
  storeRunOutcome(lease: Lease, taskId: string, outcome: RunOutcome): Promise<void>;
  /**
   * Records the result of one advance and completes its work item, in one transaction, with
   * the run's new log lines as `task.log` events (`result.logs`).
   */
  finishAdvance(lease: Lease, taskId: string, result: AdvanceResult): Promise<void>;
}

/**
 * Jobs at their providers: admission, creation, the events that move them and the
 * reconciler's polls, up to their end (ARCHITECTURE §3.2, §3.5, §4.3, §4.6).
 */
/** A provider's enqueued-token budget for one model (ARCHITECTURE §4.8). */
export interface ProviderBudget {
  model: string;
  maxTokens: number;
}

export interface JobStore {
  getJob(jobId: string): Promise<JobRow | null>;
  /**
   * Admits a job under its tenant's quotas before it is created at the provider: `ok` (it
   * holds a slot now), `parked` (the item is given back until a slot frees) or `rejected`
   * (over the token budget with the reject policy). With `budget`, the job must also fit in its
   * provider's enqueued-token budget for its model, or it is parked (ARCHITECTURE §4.8).
   */
  acquireJobSlot(lease: Lease, jobId: string, budget?: ProviderBudget): Promise<"ok" | "parked" | "rejected">;
  /**
   * The provider rate-limited the job's creation (a 429): the dispatch item waits until
   * `retryAt` without counting an attempt, the job's throttle count grows, and the task's
   * timeline gets a `job.throttled` event with the reason and `retry_at` (ARCHITECTURE §4.8).
   */
  throttleJob(lease: Lease, jobId: string, reason: string, retryAt: number): Promise<void>;
  /**
   * Records the provider's id for a dispatched job, completes the dispatch item, and
   * re-queues any event that arrived for that job before it was known (ARCHITECTURE §3.5).
   */
  recordJobCreated(lease: Lease, jobId: string, externalId: string, status: JobStatus): Promise<void>;
  /** A dispatch that cannot succeed: the job and its step fail, and the task is advanced. */
  failJob(lease: Lease, jobId: string, error: ErrorInfo): Promise<void>;
  /** Applies a parsed provider event to its job, step and task exactly once (ARCHITECTURE §3.2, §3.3). */
  applyJobEvent(lease: Lease, inboxId: string, provider: string, event: ProviderEvent): Promise<ApplyOutcome>;
  /**
   * Finishes a reconciler poll of `jobId`: records the synthesized event (if the poll saw the
   * job move) exactly as ingress would, and schedules the next poll (if it has not ended).
   */
  recordPoll(
    lease: Lease,
    jobId: string,
    event: NewInboxEvent | null,
    next: { runAt: number; attempt: number } | null,
  ): Promise<void>;
}

/** The inbox of verified deliveries, each applied once (by `JobStore.applyJobEvent`). */
export interface InboxStore {
  /**
   * Records a verified inbound delivery and its apply item in one transaction (ARCHITECTURE §3.1).
   * A second delivery of the same `(source, eventId)` changes nothing; with `bindsBody` and
   * another body, it is reported as `bodyDiffers`.
   */
  recordEvent(e: NewInboxEvent): Promise<{ id: string; duplicate: boolean; bodyDiffers?: boolean }>;
  getInboxEvent(id: string): Promise<InboxEventRow | null>;
  /** Marks an inbox event that could not be parsed, and completes its item. */
  rejectInboxEvent(lease: Lease, inboxId: string, note: string): Promise<void>;
  /**
   * Finishes an event whose source confirms with its provider (ARCHITECTURE §4.3): marks it
   * ignored with what it named and what the provider said, records the provider's `answer`
   * (if any) as the reconciler would, and completes the item, in one transaction.
   */
  recordConfirmation(
    lease: Lease,
    inboxId: string,
    seen: { type: string; jobExternalId: string; note: string },
    answer: NewInboxEvent | null,
  ): Promise<void>;
  /** Deletes inbox rows received before `before` (the dedupe horizon). Returns how many. */
  pruneInbox(before: number): Promise<number>;
  /** Inbox rows, newest first, for the admin API. */
  listInbox(q: {
    source?: string | undefined;
    status?: InboxStatus | undefined;
    limit: number;
    cursor?: string | undefined;
  }): Promise<{
    events: InboxEventRow[];
    nextCursor: string | null;
  }>;
  /** Queues an inbox event to be applied again; its effect stays exactly-once (ARCHITECTURE §3.2). EVENT_NOT_FOUND. */
  replayInboxEvent(id: string): Promise<InboxEventRow>;
  /**
   * The inbox rows of these jobs (the provider's job ids), oldest first: every webhook delivery
   * and reconciler poll a task's timeline shows. A row gets its job id when it is applied, so
   * one still waiting to be applied is not returned. The caller scopes `externalIds` to a
   * tenant's jobs (ARCHITECTURE §3.6). Empty `externalIds`: no rows.
   */
  inboxForJobs(provider: string, externalIds: string[]): Promise<InboxEventRow[]>;
}

/** Waits: callbacks, approvals, signals, reminders and deadlines. */
export interface WaitStore {
  /**
   * Stores a new wait step with its deadline timer, and what it needs: a job and its
   * dispatch, reminder timers, a signal subscription (satisfied at once by a signal that
   * came first, ARCHITECTURE §3.5). Returns the stored step.
   */
  registerWait(lease: Lease, taskId: string, wait: WaitRequest): Promise<StoredStep>;
  markHandedOff(lease: Lease, taskId: string, stepId: string): Promise<void>;
  /** A step's row and its task's status, for the holder of a capability token (already verified). */
  stepForToken(
    tenantId: string,
    taskId: string,
    stepId: string,
  ): Promise<{ task: TaskRow; step: StepRow } | null>;
  /**
   * Ends a callback step with the posted result if it still waits with `attempt`. Every
   * call is recorded in the inbox (source `callback`), refused ones too (ARCHITECTURE §3.3), but
   * only an applied call keeps its body there; a refused one keeps its SHA-256 and size. The
   * same body again, once the step succeeded with it, answers `duplicate`.
   */
  completeCallback(c: CallbackDelivery): Promise<CallbackAnswer>;
  /** Records one approver's decision; ends the step when the quorum is reached or lost. */
  decideApproval(d: ApprovalDecisionInput): Promise<DecisionAnswer>;
  approvalDecisions(taskId: string, stepId: string): Promise<ApprovalDecisionRow[]>;
  /** Stores a signal and ends every wait it matches. The same `clientId` again is a duplicate. */
  recordSignal(s: { tenantId: string; name: string; data: unknown; clientId: string | null }): Promise<{
    id: string;
    duplicate: boolean;
    matched: number;
  }>;
  /**
   * Deletes signals received before `before` (the signal retention). A wait registered
   * later no longer sees them, and their `clientId` no longer marks a resend as a duplicate.
   */
  pruneSignals(before: number): Promise<number>;
  /** A reminder or escalation timer of an approval: emits its task event if the step still waits. */
  fireReminder(
    lease: Lease,
    taskId: string,
    stepId: string,
    type: "reminder" | "escalation",
  ): Promise<boolean>;
  /** At a wait's deadline: times the step out if it is still waiting, and advances the task. */
  fireTimeout(lease: Lease, taskId: string, stepId: string): Promise<boolean>;
}

/** The durable work queue: enqueue, claim under a lease, complete, retry, dead-letter. */
export interface QueueStore {
  enqueue(items: NewWorkItem[]): Promise<void>;
  /** Leases up to `limit` due items, never two with the same concurrency key at once. */
  claim(owner: string, limit: number, leaseMs: number): Promise<WorkItem[]>;
  complete(lease: Lease): Promise<void>;
  /** Pushes a held lease's expiry to now + `leaseMs`; LEASE_LOST if it is no longer held. */
  extendLease(lease: Lease, leaseMs: number): Promise<void>;
  /** Gives the item back for another attempt at `retryAt`, or dead-letters it after its last attempt. */
  fail(lease: Lease, error: string, retryAt: number): Promise<"retry" | "dead">;
  /** Returns expired leases to the queue (or to the dead letter after their last attempt). */
  recoverExpiredLeases(): Promise<number>;
  /**
   * Called once when a worker starts. SQLite: one process owns the file, so leases left by
   * an earlier process of it are orphans and are handed back at once instead of after
   * their expiry. PostgreSQL: nothing (other nodes may be alive).
   */
  releaseOrphanedLeases(): Promise<number>;
  /** The earliest `run_at` of a pending item, for sleeping until there is work. */
  nextRunAt(): Promise<number | null>;
  deadItems(limit: number): Promise<WorkItem[]>;
  /** Pending items per kind and the oldest one due at `now`, in one statement (for metrics). */
  queueStats(now: number): Promise<QueueKindStats[]>;
  /** Calls `fn` after a commit that may have made work due; returns the unsubscribe. */
  onWork(fn: () => void): () => void;
}

/** What the queue holds of one kind of work: pending items, and when the oldest due one was due. */
export interface QueueKindStats {
  kind: string;
  depth: number;
  /** The `run_at` of the oldest pending item due now; null if none is due yet. */
  oldestDueAt: number | null;
}

/**
 * Webhooks refused before they were recorded, counted per source, reason and minute
 * (src/core/webhook-refusal.ts).
 */
export interface WebhookRefusalStore {
  /** Counts one refusal in its (source, code, minute) bucket: one statement. */
  recordWebhookRefusal(r: WebhookRefusal): Promise<void>;
  /** Refusal buckets, newest first, for the admin API. */
  listWebhookRefusals(q: {
    source?: string | undefined;
    limit: number;
    cursor?: string | undefined;
  }): Promise<{
    refusals: WebhookRefusalRow[];
    nextCursor: string | null;
  }>;
  /** Deletes the buckets of minutes before `before` (their retention). Returns how many. */
  pruneWebhookRefusals(before: number): Promise<number>;
}

/** Each tenant's append-only log of task events, and its announcements. */
export interface EventLogStore {
  taskEvents(tenantId: string, afterSeq: number, limit: number, taskId?: string): Promise<TaskEventRow[]>;
  /**
   * Calls `fn` once per appended task event, after the commit that made it durable, never
   * before; returns the unsubscribe. Feeds the SSE streams (ARCHITECTURE §4.7).
   */
  onTaskEvents(fn: (tenantId: string, seq: number) => void): () => void;
  /** The seq of the tenant's newest task event, 0 if none: where a stream without Last-Event-ID starts. */
  lastTaskEventSeq(tenantId: string): Promise<number>;
}

/** Webhook endpoints of tenants and the deliveries of their events. */
export interface OutboundStore {
  /** Stores a tenant's endpoint with its signing secret. Task events appended later fan out to it. */
  createWebhookEndpoint(e: NewWebhookEndpoint): Promise<WebhookEndpointRow>;
  /** `scope` (default webhooks): webhook endpoints or event sinks; each call sees only its own kind. */
  listWebhookEndpoints(tenantId: string, scope?: EndpointScope): Promise<WebhookEndpointRow[]>;
  /** Removes an endpoint, its deliveries and their queued work; false if the tenant has no such endpoint. */
  deleteWebhookEndpoint(tenantId: string, endpointId: string, scope?: EndpointScope): Promise<boolean>;
  /** An endpoint's deliveries, newest first; null if the tenant has no such endpoint. */
  listWebhookDeliveries(
    tenantId: string,
    endpointId: string,
    q: { limit: number; cursor?: string | undefined; state?: DeliveryState | undefined },
    scope?: EndpointScope,
  ): Promise<{ deliveries: WebhookDeliveryRow[]; nextCursor: string | null } | null>;
  /**
   * Queues a dead or failed delivery again, with the whole retry schedule ahead of it.
   * WEBHOOK_ENDPOINT_NOT_FOUND, DELIVERY_NOT_FOUND, DELIVERY_NOT_REPLAYABLE (other states, or a disabled endpoint).
   */
  replayWebhookDelivery(
    tenantId: string,
    endpointId: string,
    deliveryId: string,
    scope?: EndpointScope,
  ): Promise<WebhookDeliveryRow>;
  /**
   * Replaces an endpoint's signing secret with `secret` (as stored: sealed when a key is set,
   * for the endpoint's `secret` place). The replaced one keeps signing, next to the new one
   * and to earlier ones still unexpired, for `previousOverlapMs` from the rotation (which is
   * also the endpoint's `updatedAt`); null stops every earlier secret at once. Null if the
   * tenant has no such endpoint. LIMIT_REACHED when `MAX_PREVIOUS_SECRETS` still sign.
   */
  rotateWebhookEndpointSecret(
    tenantId: string,
    endpointId: string,
    secret: string,
    previousOverlapMs: number | null,
  ): Promise<WebhookEndpointRow | null>;
  /** What one attempt needs: the delivery, its endpoint with the secret, its task event; null if gone. */
  deliveryForAttempt(deliveryId: string): Promise<DeliveryAttemptInput | null>;
  /**
   * When an earlier delivery of the same endpoint and task is still pending, when to look again
   * (its next attempt, and at least SINK_TURN_WAIT_MS ahead); null when none is. Event sinks
   * keep a task's events in order by it.
   */
  earlierPendingDelivery(deliveryId: string): Promise<number | null>;
  /** Puts a delivery's work item back until `runAt` without counting an attempt (it waits its turn). */
  deferDelivery(lease: Lease, runAt: number): Promise<void>;
  /**
   * Records one attempt and, in the same transaction, reschedules its work item (`retry`) or
   * completes it; `gone` also disables the endpoint and cancels its pending deliveries.
   */
  recordDeliveryAttempt(lease: Lease, deliveryId: string, result: DeliveryAttemptResult): Promise<void>;
  /** Deletes delivered or canceled webhook deliveries last changed before `before`; dead ones stay for replay. */
  pruneDeliveries(before: number): Promise<number>;
}

/** Deployment-wide values (generated token keys, secrets to reseal) and the schema. */
export interface MetaStore {
  /** A small key-value table for deployment settings (generated secrets, token keys). */
  getMeta(key: string): Promise<string | null>;
  /** Sets `key` unless it is set already; returns the value that is now stored. */
  putMetaIfAbsent(key: string, value: string): Promise<string>;
  /**
   * Rewrites every stored secret (endpoint secrets, and the meta values under `metaKeys`) as
   * `reseal` maps it, given its place (`table:id:column`, src/core/sealed-at.ts), each only
   * if unchanged since it was read; previous endpoint secrets that expired are dropped.
   * Returns how many values changed. Run at start and by `longhaul secrets reseal` (see
   * src/secrets/).
   */
  resealSecrets(reseal: (stored: string, at: string) => string, metaKeys: readonly string[]): Promise<number>;
  /** Applies pending migrations; refuses a schema newer than this code (SCHEMA_TOO_NEW). */
  migrate(): Promise<{ from: number; to: number }>;
  /** The migrations applied and pending, read without changing anything (no table is created). */
  migrationStatus(): Promise<MigrationStatus>;
  close(): Promise<void>;
  /**
   * For /healthz: `degraded` while the database cannot be reached (PostgreSQL restarting);
   * `full` from a write refused for lack of disk space (STORAGE_FULL) until writes succeed again.
   */
  health(): Promise<"ok" | "degraded" | "full">;
}

/**
 * The one persistence interface (ARCHITECTURE §4.1). Every method is an atomic operation: it
 * commits entirely or not at all, and when its promise resolves the change is durable
 * (ARCHITECTURE §3.1). Implementations: `sqlite/` (group commit) and `postgres/`. Both run
 * `test/store-contract.ts`.
 *
 * Methods that finish a claimed work item take its `Lease` and fail with LEASE_LOST when the
 * lease has passed to another worker, so a worker that stalled past its lease cannot
 * overwrite its successor's work (ARCHITECTURE §3.4).
 */
/** An approval's messages (src/notify): read to send, each attempt recorded, a dead one replayed. */
export interface NotificationStore {
  notification(id: string): Promise<NotificationRow | null>;
  /** A task's notifications, oldest first; the caller scopes the task to its tenant. */
  notificationsOf(taskId: string): Promise<NotificationRow[]>;
  /** Records an attempt and retries or completes its work item in one transaction; emits `notification.*`. */
  recordNotificationAttempt(lease: Lease, id: string, r: NotificationAttemptResult): Promise<void>;
  /** A dead notification sent again. NOTIFICATION_NOT_FOUND, NOTIFICATION_NOT_REPLAYABLE. */
  replayNotification(tenantId: string, taskId: string, id: string): Promise<NotificationRow>;
}

export interface NotificationRow {
  id: string;
  tenantId: string;
  taskId: string;
  stepId: string;
  /** The step attempt whose links the message carries. */
  stepAttempt: number;
  /** Null: the step's own links. */
  approver: string | null;
  target: NotifyEntry;
  channel: string;
  reason: NotifyReason;
  state: NotificationState;
  attempts: number;
  roundAttempts: number;
  lastError: ErrorInfo | null;
  nextAttemptAt: number | null;
  sentAt: number | null;
  createdAt: number;
}

/**
 * What one attempt of a message came to: `sent`; `retry` at `nextAttemptAt`; `dead` after the
 * schedule's last slot; `failed` when no retry can help (a malformed address, a refused
 * target); `skipped` when its approval ended before it went.
 */
export type NotificationAttemptResult =
  | { outcome: "sent" }
  | { outcome: "skipped" }
  | { outcome: "retry"; error: ErrorInfo; nextAttemptAt: number }
  | { outcome: "dead" | "failed"; error: ErrorInfo };

export interface Store
  extends TenantStore,
    NotificationStore,
    TaskStore,
    AdvanceStore,
    JobStore,
    InboxStore,
    WaitStore,
    QueueStore,
    EventLogStore,
    OutboundStore,
    WebhookRefusalStore,
    MetaStore,
    StatsStore,
    FileStore,
    ArtifactStore,
    ChunkStore {}

/**
 * The chunks index (`core/chunk.ts`, migration 023): tasks' chunks with their vectors, and
 * the reads an exact vector scan and a keyword search need. Every call names the tenant.
 */
export interface ChunkStore {
  /** Replaces the task's chunks, in one transaction: all of `chunks` or, on a failure, the old set. */
  replaceTaskChunks(
    task: { tenantId: string; taskId: string; taskType: string },
    embedder: { name: string; dimensions: number },
    chunks: readonly NewChunk[],
  ): Promise<number>;
  /** A page of the tenant's vectors of one embedder, in seq order after `afterSeq`. */
  chunkVectorPage(
    tenantId: string,
    q: { embedder: string; dims: number; filter: ChunkFilter; afterSeq: number; limit: number },
  ): Promise<{ seq: number; embedding: Float32Array }[]>;
  /** The tenant's chunks holding any of `terms` (plain words), best first. */
  keywordChunks(
    tenantId: string,
    q: { terms: readonly string[]; filter: ChunkFilter; limit: number },
  ): Promise<{ seq: number; score: number }[]>;
  chunksBySeq(tenantId: string, seqs: readonly number[]): Promise<ChunkRow[]>;
  /** How many chunks the tenant has, or one of its tasks. */
  countChunks(tenantId: string, taskId?: string): Promise<number>;
}

/**
 * Uploaded files' rows (`core/file.ts`); their bytes are the blob store's. Every read and
 * delete names the tenant: another tenant's id reads as none.
 */
export interface FileStore {
  /**
   * Inserts the file, or answers the tenant's file with the same SHA-256 (`created: false`).
   * With `storageQuotaBytes` (`limits.storage_quota_bytes`; the tenant's own quota wins), a new
   * file that would take the tenant past its quota is refused, STORAGE_QUOTA_EXCEEDED, in the
   * same transaction that would have inserted it.
   */
  createFile(f: NewFile, opts?: { storageQuotaBytes?: number }): Promise<{ file: FileRow; created: boolean }>;
  getFile(tenantId: string, id: string): Promise<FileRow | null>;
  /** The tenant's files, newest first. */
  listFiles(
    tenantId: string,
    q: { limit: number; cursor?: string | undefined },
  ): Promise<{ files: FileRow[]; nextCursor: string | null }>;
  /** Deletes the row, and the chunks indexed from it, and answers it; null when the tenant has no such file. */
  deleteFile(tenantId: string, id: string): Promise<FileRow | null>;
  /**
   * Which of `keys` (blob keys, any tenant's) a file's or an artifact's row names: what the
   * maintenance sweep keeps. At most a page of keys at a time (500).
   */
  namedBlobKeys(keys: readonly string[]): Promise<Set<string>>;
}

/** Reads for a tenant's task throughput and latency (`core/task-stats.ts`). */
export interface StatsStore {
  /**
   * The tasks submitted in `[from, to)` (their `created_at`) and those that ended in it, each
   * newest first and at most `maxRows`. Index range scans only: `tasks_by_tenant_created` and
   * `tasks_by_tenant_ended` (migration 016). No locks.
   */
  taskStatsRows(tenantId: string, from: number, to: number, maxRows: number): Promise<StatsRows>;
}

export interface Lease {
  itemId: string;
  owner: string;
}

export interface ApiKeyRow {
  id: string;
  /** The last characters of the key, to tell keys apart; the key itself is never stored. */
  hint: string | null;
  createdAt: number;
  revokedAt: number | null;
}

export interface TenantUsage {
  tenant: TenantRow;
  tasksByStatus: Partial<Record<TaskStatus, number>>;
  jobsRunning: number;
  daily: {
    day: string;
    tasks_submitted: number;
    jobs_created: number;
    jobs_failed: number;
    tokens: number;
  }[];
  recentJobFailures: {
    jobId: string;
    taskId: string;
    stepId: string;
    provider: string;
    externalId: string | null;
    error: unknown;
    at: number;
  }[];
}

export interface NewTask {
  tenantId: string;
  type: string;
  input: unknown;
  clientRequestId: string | null;
  userId: string | null;
  traceId: string | null;
  /** The task this one re-runs; its client_request_id then names this re-run of that task only. */
  rerunOf?: string | null;
  /** A delayed start (`run_at` or `delay`): its first advance is queued for then. */
  start?: StartRequest;
}

/** A re-run of one of a tenant's tasks (ARCHITECTURE §4.4). */
export interface NewRerun {
  tenantId: string;
  taskId: string;
  from: RerunFrom;
  /** Idempotency: the same id from the same tenant returns the first re-run. */
  clientRequestId: string | null;
}

export interface TaskDetail {
  task: TaskRow;
  steps: StepRow[];
  jobs: JobRow[];
  /** The task's artifacts, in the order they were stored. */
  artifacts: ArtifactRow[];
  /** The ids of the tasks that re-run this one, oldest first. */
  reruns?: string[];
}

export interface TaskQuery {
  status?: TaskStatus | undefined;
  type?: string | undefined;
  userId?: string | undefined;
  traceId?: string | undefined;
  /** Created at or after this time (ms since the epoch). */
  createdFrom?: number | undefined;
  /** Created before this time (ms since the epoch). */
  createdBefore?: number | undefined;
  limit: number;
  cursor?: string | undefined;
}

export interface ApprovalDecisionInput {
  tenantId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  /** The approver the link (or the API call) names; null for a shared link. */
  approver: string | null;
  decision: "approve" | "reject";
  comment: string | null;
  channel: DecisionChannel;
  /** The name a shared link's holder typed. */
  claimedBy?: string | null;
  /** The hash of the API key a decision through the API came with; its key's id is recorded. */
  keyHash?: string | null;
  userId?: string | null;
  address?: string | null;
  userAgent?: string | null;
}

export type InboxStatus = "received" | "applied" | "ignored" | "unmatched" | "invalid";

export interface NewInboxEvent {
  source: string;
  provider: string;
  eventId: string;
  body: Buffer;
  /**
   * The event id names a credential meant for one delivery (a webhook token): a repeat
   * under it is a duplicate only with the same bytes, and `recordEvent` answers
   * `bodyDiffers` (recording nothing) for another body.
   */
  bindsBody?: boolean;
}

export interface InboxEventRow {
  id: string;
  source: string;
  provider: string;
  eventId: string;
  body: Buffer;
  status: InboxStatus;
  type: string | null;
  jobExternalId: string | null;
  note: string | null;
  receivedAt: number;
}

export type ApplyOutcome = "applied" | "ignored" | "unmatched";

export interface TaskEventRow {
  seq: number;
  tenantId: string;
  taskId: string;
  type: string;
  data: unknown;
  createdAt: number;
}

/** What an endpoint sends to: an HTTP receiver, or a message broker (an event sink, src/sinks). */
export type EndpointKind = "webhook" | SinkKind;

/** Which endpoints a call sees: webhook endpoints, or event sinks (their routes are apart). */
export type EndpointScope = "webhooks" | "sinks";

export interface NewWebhookEndpoint {
  tenantId: string;
  /** What is shown as its URL: for a sink, the broker URL without credentials. */
  url: string;
  /** Absent: a webhook. */
  kind?: EndpointKind | undefined;
  /** A sink's subject prefix, exchange or stream. */
  target?: string | null | undefined;
  /** Event types and prefixes (`task.*`); null: every event. */
  events: string[] | null;
  /**
   * The signing secret as stored, or a function that makes it from the endpoint's id (which
   * the store chooses): a sealed secret is bound to its row.
   */
  secret: string | ((endpointId: string) => string);
  /**
   * The most endpoints the tenant may have (`limits.webhook_endpoints_per_tenant`): at that
   * count the create fails with LIMIT_REACHED. Checked in the insert's transaction, so
   * concurrent creates cannot pass it together. Absent: no cap.
   */
  maxPerTenant?: number | undefined;
}

export interface WebhookEndpointRow {
  id: string;
  tenantId: string;
  url: string;
  kind: EndpointKind;
  /** A sink's subject prefix, exchange or stream; null for a webhook. */
  target: string | null;
  events: string[] | null;
  status: "enabled" | "disabled";
  disabledReason: string | null;
  /** Until when a secret replaced by a rotation still signs deliveries (the last of them); null: none does. */
  previousSecretExpiresAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface WebhookDeliveryRow {
  id: string;
  tenantId: string;
  endpointId: string;
  eventSeq: number;
  eventType: string;
  taskId: string;
  state: DeliveryState;
  /** Every attempt ever made. */
  attempts: number;
  /** Attempts in the current run of the schedule (a replay starts a new one). */
  roundAttempts: number;
  lastStatus: number | null;
  lastError: ErrorInfo | null;
  nextAttemptAt: number | null;
  deliveredAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface DeliveryAttemptInput {
  delivery: WebhookDeliveryRow;
  /** The secrets as stored (sealed when a key is set); `previousSecrets`: those that still sign. */
  endpoint: WebhookEndpointRow & { secret: string; previousSecrets: string[] };
  event: TaskEventRow;
}

/**
 * What storing an artifact came to: its row (`created: false` when the task already had one of
 * that name), or, past the tenant's storage quota, the error its step was stored failed with.
 */
export type StoredArtifact = { artifact: ArtifactRow; created: boolean } | { refused: ErrorInfo };

/**
 * Tasks' named artifacts (`core/artifact.ts`); their bytes are the blob store's. A read names
 * the tenant: another tenant's task has none.
 */
export interface ArtifactStore {
  /**
   * Inserts the artifact and stores its `step.artifact` outcome (`ArtifactInfo`) in one
   * transaction, under the advance's lease. When the task already has an artifact of that
   * name, that one is answered (`created: false`) and its step stored with it.
   */
  storeArtifact(
    lease: Lease,
    step: { stepId: string; position: number; attempts: number },
    artifact: ArtifactRow,
    opts?: { storageQuotaBytes?: number },
  ): Promise<StoredArtifact>;
  getArtifact(tenantId: string, taskId: string, name: string): Promise<ArtifactRow | null>;
}
