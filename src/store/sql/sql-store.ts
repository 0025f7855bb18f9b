import type { ChunkFilter, NewChunk } from "../../core/chunk.ts";
import type { ErrorInfo } from "../../core/errors.ts";
import type { JobStatus } from "../../core/job.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import type { Quotas } from "../../core/quota.ts";
import type { RunOutcome } from "../../core/replay.ts";
import type { WaitRequest } from "../../core/wait.ts";
import type { MigrationStatus } from "../migrations.ts";
import * as advance from "../ops/advance-ops.ts";
import * as artifacts from "../ops/artifact-ops.ts";
import * as chunks from "../ops/chunk-ops.ts";
import * as eventLog from "../ops/event-log-ops.ts";
import * as files from "../ops/file-ops.ts";
import * as inbox from "../ops/inbox-ops.ts";
import * as jobs from "../ops/job-ops.ts";
import * as meta from "../ops/meta-ops.ts";
import * as notify from "../ops/notification-ops.ts";
import * as outbound from "../ops/outbound-ops.ts";
import * as queue from "../ops/queue-ops.ts";
import * as refusals from "../ops/refusal-ops.ts";
import * as reruns from "../ops/rerun-ops.ts";
import * as taskStats from "../ops/stats-ops.ts";
import * as tasks from "../ops/task-ops.ts";
import * as tenants from "../ops/tenant-ops.ts";
import * as waits from "../ops/wait-ops.ts";
import type {
  AdvanceResult,
  ApprovalDecisionInput,
  ArtifactRow,
  CallbackDelivery,
  DeliveryAttemptResult,
  DeliveryState,
  EndpointScope,
  InboxEventRow,
  InboxStatus,
  Lease,
  NewFile,
  NewInboxEvent,
  NewRerun,
  NewTask,
  NewWebhookEndpoint,
  NewWorkItem,
  NotificationAttemptResult,
  ProviderBudget,
  Store,
  TaskQuery,
  WebhookRefusal,
  WorkItem,
} from "../store.ts";
import type { Tx } from "./tx.ts";

/** How a dialect runs one operation of `ops/`, whole, on its connection. */
export interface Runner {
  /**
   * A read-write transaction: under SQLite a savepoint of the group commit's transaction,
   * under PostgreSQL a transaction of its own, retried from the start after a conflict.
   * Resolves after COMMIT; its task events and wake-ups are announced then.
   */
  write<T>(op: (tx: Tx) => Promise<T>): Promise<T>;
  /** Several reads that see one consistent snapshot. */
  snapshot<T>(op: (tx: Tx) => Promise<T>): Promise<T>;
  /** A single read statement. */
  read<T>(op: (tx: Tx) => Promise<T>): Promise<T>;
}

/**
 * The `Store` both dialects share: every operation is written once in `ops/` and run here
 * through the dialect's `Runner`. A dialect adds what really differs: claiming, its
 * notifications, health, migrations and closing (ARCHITECTURE §4.1).
 */
export abstract class SqlStore implements Store {
  protected abstract readonly run: Runner;

  abstract claim(owner: string, limit: number, leaseMs: number): Promise<WorkItem[]>;
  abstract releaseOrphanedLeases(): Promise<number>;
  abstract onWork(fn: () => void): () => void;
  abstract onTaskEvents(fn: (tenantId: string, seq: number) => void): () => void;
  abstract inboxForJobs(provider: string, externalIds: string[]): Promise<InboxEventRow[]>;
  abstract health(): Promise<"ok" | "degraded" | "full">;
  abstract migrate(): Promise<{ from: number; to: number }>;
  abstract migrationStatus(): Promise<MigrationStatus>;
  abstract close(): Promise<void>;

  // ── tenants ──
  createTenant(t: { id?: string; name: string; keyHash: string; keyHint?: string; quotas?: Quotas }) {
    return this.run.write((tx) => tenants.createTenant(tx, t));
  }
  ensureTenant(t: { id: string; name: string; keyHash: string }) {
    return this.run.write((tx) => tenants.ensureTenant(tx, t));
  }
  tenantByKeyHash(keyHash: string) {
    return this.run.read((tx) => tenants.tenantByKeyHash(tx, keyHash));
  }
  getTenant(id: string) {
    return this.run.read((tx) => tenants.tenant(tx, id));
  }
  listTenants() {
    return this.run.read((tx) => tenants.listTenants(tx));
  }
  updateTenant(id: string, patch: { name?: string; quotas?: Quotas }) {
    return this.run.write((tx) => tenants.updateTenant(tx, id, patch));
  }
  addApiKey(tenantId: string, keyHash: string, hint: string) {
    return this.run.write((tx) => tenants.addApiKey(tx, tenantId, keyHash, hint));
  }
  revokeApiKey(tenantId: string, keyId: string) {
    return this.run.write((tx) => tenants.revokeApiKey(tx, tenantId, keyId));
  }
  listApiKeys(tenantId: string) {
    return this.run.read((tx) => tenants.listApiKeys(tx, tenantId));
  }
  usage(tenantId: string, days: number) {
    return this.run.snapshot((tx) => tenants.usage(tx, tenantId, days));
  }

  // ── tasks ──
  submitTask(t: NewTask) {
    return this.run.write((tx) => tasks.submitTask(tx, t));
  }
  submitTasks(ts: readonly NewTask[]) {
    return this.run.write((tx) => tasks.submitTasks(tx, ts));
  }
  getTask(tenantId: string, taskId: string) {
    return this.run.snapshot((tx) => tasks.getTask(tx, tenantId, taskId));
  }
  listTasks(tenantId: string, q: TaskQuery) {
    return this.run.read((tx) => tasks.listTasks(tx, tenantId, q));
  }
  cancelTask(tenantId: string, taskId: string) {
    return this.run.write((tx) => tasks.cancelTask(tx, tenantId, taskId));
  }
  rerunTask(r: NewRerun) {
    return this.run.write((tx) => reruns.rerunTask(tx, r));
  }
  rerunTaskIds(tenantId: string, taskIds: readonly string[]) {
    return this.run.read((tx) => reruns.rerunTaskIds(tx, tenantId, taskIds));
  }
  taskStatsRows(tenantId: string, from: number, to: number, maxRows: number) {
    return this.run.snapshot((tx) => taskStats.taskStatsRows(tx, tenantId, from, to, maxRows));
  }

  // ── advances ──
  loadForAdvance(taskId: string) {
    return this.run.snapshot((tx) => advance.loadForAdvance(tx, taskId));
  }
  taskStatus(taskId: string) {
    return this.run.read((tx) => advance.taskStatus(tx, taskId));
  }
  beginAdvance(lease: Lease, taskId: string) {
    return this.run.write((tx) => advance.beginAdvance(tx, lease, taskId));
  }
  storeRunOutcome(lease: Lease, taskId: string, outcome: RunOutcome) {
    return this.run.write((tx) => advance.storeRunOutcome(tx, lease, taskId, outcome));
  }
  finishAdvance(lease: Lease, taskId: string, result: AdvanceResult) {
    return this.run.write((tx) => advance.finishAdvance(tx, lease, taskId, result));
  }

  // ── jobs ──
  getJob(jobId: string) {
    return this.run.read((tx) => jobs.getJob(tx, jobId));
  }
  acquireJobSlot(lease: Lease, jobId: string, budget?: ProviderBudget) {
    return this.run.write((tx) => jobs.acquireJobSlot(tx, lease, jobId, budget));
  }
  throttleJob(lease: Lease, jobId: string, reason: string, retryAt: number) {
    return this.run.write((tx) => jobs.throttleJob(tx, lease, jobId, reason, retryAt));
  }
  recordJobCreated(lease: Lease, jobId: string, externalId: string, status: JobStatus) {
    return this.run.write((tx) => jobs.recordJobCreated(tx, lease, jobId, externalId, status));
  }
  failJob(lease: Lease, jobId: string, error: ErrorInfo) {
    return this.run.write((tx) => jobs.failJob(tx, lease, jobId, error));
  }
  applyJobEvent(lease: Lease, inboxId: string, provider: string, event: ProviderEvent) {
    return this.run.write((tx) => jobs.applyJobEvent(tx, lease, inboxId, provider, event));
  }
  recordPoll(
    lease: Lease,
    jobId: string,
    event: NewInboxEvent | null,
    next: { runAt: number; attempt: number } | null,
  ) {
    return this.run.write((tx) => jobs.recordPoll(tx, lease, jobId, event, next));
  }

  // ── inbox ──
  recordEvent(e: NewInboxEvent) {
    return this.run.write((tx) => inbox.recordEvent(tx, e));
  }
  getInboxEvent(id: string) {
    return this.run.read((tx) => inbox.getInboxEvent(tx, id));
  }
  rejectInboxEvent(lease: Lease, inboxId: string, note: string) {
    return this.run.write((tx) => inbox.rejectInboxEvent(tx, lease, inboxId, note));
  }
  recordConfirmation(
    lease: Lease,
    inboxId: string,
    seen: { type: string; jobExternalId: string; note: string },
    answer: NewInboxEvent | null,
  ) {
    return this.run.write((tx) => inbox.recordConfirmation(tx, lease, inboxId, seen, answer));
  }
  listInbox(q: { source?: string; status?: InboxStatus; limit: number; cursor?: string }) {
    return this.run.read((tx) => inbox.listInbox(tx, q));
  }
  replayInboxEvent(id: string) {
    return this.run.write((tx) => inbox.replayInboxEvent(tx, id));
  }
  pruneInbox(before: number) {
    return this.run.write((tx) => inbox.pruneInbox(tx, before));
  }

  // ── waits ──
  registerWait(lease: Lease, taskId: string, wait: WaitRequest) {
    return this.run.write((tx) => waits.registerWait(tx, lease, taskId, wait));
  }
  markHandedOff(lease: Lease, taskId: string, stepId: string) {
    return this.run.write((tx) => waits.markHandedOff(tx, lease, taskId, stepId));
  }
  stepForToken(tenantId: string, taskId: string, stepId: string) {
    return this.run.snapshot((tx) => waits.stepForToken(tx, tenantId, taskId, stepId));
  }
  completeCallback(d: CallbackDelivery) {
    return this.run.write((tx) => waits.completeCallback(tx, d));
  }
  decideApproval(d: ApprovalDecisionInput) {
    return this.run.write((tx) => waits.decideApproval(tx, d));
  }
  approvalDecisions(taskId: string, stepId: string) {
    return this.run.read((tx) => waits.approvalDecisions(tx, taskId, stepId));
  }
  recordSignal(s: { tenantId: string; name: string; data: unknown; clientId: string | null }) {
    return this.run.write((tx) => waits.recordSignal(tx, s));
  }
  fireReminder(lease: Lease, taskId: string, stepId: string, type: "reminder" | "escalation") {
    return this.run.write((tx) => waits.fireReminder(tx, lease, taskId, stepId, type));
  }
  fireTimeout(lease: Lease, taskId: string, stepId: string) {
    return this.run.write((tx) => waits.fireTimeout(tx, lease, taskId, stepId));
  }
  pruneSignals(before: number) {
    return this.run.write((tx) => waits.pruneSignals(tx, before));
  }

  // ── notifications ──
  notification(id: string) {
    return this.run.read((tx) => notify.notification(tx, id));
  }
  notificationsOf(taskId: string) {
    return this.run.read((tx) => notify.notificationsOf(tx, taskId));
  }
  recordNotificationAttempt(lease: Lease, id: string, r: NotificationAttemptResult) {
    return this.run.write((tx) => notify.recordNotificationAttempt(tx, lease, id, r));
  }
  replayNotification(tenantId: string, taskId: string, id: string) {
    return this.run.write((tx) => notify.replayNotification(tx, tenantId, taskId, id));
  }

  // ── queue ──
  enqueue(items: NewWorkItem[]) {
    return this.run.write((tx) => tx.enqueue(items));
  }
  complete(lease: Lease) {
    return this.run.write((tx) => queue.complete(tx, lease));
  }
  extendLease(lease: Lease, leaseMs: number) {
    return this.run.write((tx) => queue.extendLease(tx, lease, leaseMs));
  }
  fail(lease: Lease, error: string, retryAt: number) {
    return this.run.write((tx) => queue.fail(tx, lease, error, retryAt));
  }
  recoverExpiredLeases() {
    return this.run.write((tx) => queue.recoverExpiredLeases(tx));
  }
  nextRunAt() {
    return this.run.read((tx) => queue.nextRunAt(tx));
  }
  deadItems(limit: number) {
    return this.run.read((tx) => queue.deadItems(tx, limit));
  }
  queueStats(now: number) {
    return this.run.read((tx) => queue.queueStats(tx, now));
  }

  // ── event log ──
  taskEvents(tenantId: string, afterSeq: number, limit: number, taskId?: string) {
    return this.run.read((tx) => eventLog.taskEvents(tx, tenantId, afterSeq, limit, taskId));
  }
  lastTaskEventSeq(tenantId: string) {
    return this.run.read((tx) => eventLog.lastTaskEventSeq(tx, tenantId));
  }

  // ── meta ──
  getMeta(key: string) {
    return this.run.read((tx) => meta.getMeta(tx, key));
  }
  putMetaIfAbsent(key: string, value: string) {
    return this.run.write((tx) => meta.putMetaIfAbsent(tx, key, value));
  }
  resealSecrets(reseal: (stored: string, at: string) => string, metaKeys: readonly string[]) {
    return this.run.write((tx) => meta.resealSecrets(tx, reseal, metaKeys));
  }

  // ── outbound ──
  createWebhookEndpoint(e: NewWebhookEndpoint) {
    return this.run.write((tx) => outbound.createEndpoint(tx, e));
  }
  listWebhookEndpoints(tenantId: string, scope?: EndpointScope) {
    return this.run.read((tx) => outbound.listEndpoints(tx, tenantId, scope));
  }
  deleteWebhookEndpoint(tenantId: string, endpointId: string, scope?: EndpointScope) {
    return this.run.write((tx) => outbound.deleteEndpoint(tx, tenantId, endpointId, scope));
  }
  listWebhookDeliveries(
    tenantId: string,
    endpointId: string,
    q: { limit: number; cursor?: string | undefined; state?: DeliveryState | undefined },
    scope?: EndpointScope,
  ) {
    return this.run.snapshot((tx) => outbound.listDeliveries(tx, tenantId, endpointId, q, scope));
  }
  replayWebhookDelivery(tenantId: string, endpointId: string, deliveryId: string, scope?: EndpointScope) {
    return this.run.write((tx) => outbound.replayDelivery(tx, tenantId, endpointId, deliveryId, scope));
  }
  earlierPendingDelivery(deliveryId: string) {
    return this.run.read((tx) => outbound.earlierPending(tx, deliveryId));
  }
  deferDelivery(lease: Lease, runAt: number) {
    return this.run.write((tx) => outbound.deferDelivery(tx, lease, runAt));
  }
  rotateWebhookEndpointSecret(
    tenantId: string,
    endpointId: string,
    secret: string,
    previousOverlapMs: number | null,
  ) {
    return this.run.write((tx) => outbound.rotateSecret(tx, tenantId, endpointId, secret, previousOverlapMs));
  }
  deliveryForAttempt(deliveryId: string) {
    return this.run.snapshot((tx) => outbound.deliveryForAttempt(tx, deliveryId));
  }
  recordDeliveryAttempt(lease: Lease, deliveryId: string, result: DeliveryAttemptResult) {
    return this.run.write((tx) => outbound.recordAttempt(tx, lease, deliveryId, result));
  }
  pruneDeliveries(before: number) {
    return this.run.write((tx) => outbound.pruneDeliveries(tx, before));
  }

  // ── refused webhooks ──
  recordWebhookRefusal(r: WebhookRefusal) {
    return this.run.write((tx) => refusals.recordWebhookRefusal(tx, r));
  }
  listWebhookRefusals(q: { source?: string | undefined; limit: number; cursor?: string | undefined }) {
    return this.run.read((tx) => refusals.listWebhookRefusals(tx, q));
  }
  pruneWebhookRefusals(before: number) {
    return this.run.write((tx) => refusals.pruneWebhookRefusals(tx, before));
  }

  // ── artifacts ──
  storeArtifact(
    lease: Lease,
    step: { stepId: string; position: number; attempts: number },
    artifact: ArtifactRow,
    opts?: { storageQuotaBytes?: number },
  ) {
    return this.run.write((tx) => artifacts.storeArtifact(tx, lease, step, artifact, opts));
  }
  getArtifact(tenantId: string, taskId: string, name: string) {
    return this.run.read((tx) => artifacts.getArtifact(tx, tenantId, taskId, name));
  }

  // ── files ──
  createFile(f: NewFile, opts?: { storageQuotaBytes?: number }) {
    return this.run.write((tx) => files.createFile(tx, f, opts));
  }
  getFile(tenantId: string, id: string) {
    return this.run.read((tx) => files.getFile(tx, tenantId, id));
  }
  listFiles(tenantId: string, q: { limit: number; cursor?: string | undefined }) {
    return this.run.read((tx) => files.listFiles(tx, tenantId, q));
  }
  deleteFile(tenantId: string, id: string) {
    return this.run.write((tx) => files.deleteFile(tx, tenantId, id));
  }
  namedBlobKeys(keys: readonly string[]) {
    return this.run.read((tx) => files.namedBlobKeys(tx, keys));
  }

  // ── chunks ──
  replaceTaskChunks(
    task: { tenantId: string; taskId: string; taskType: string },
    embedder: { name: string; dimensions: number },
    rows: readonly NewChunk[],
  ) {
    return this.run.write((tx) => chunks.replaceTaskChunks(tx, task, embedder, rows));
  }
  chunkVectorPage(
    tenantId: string,
    q: { embedder: string; dims: number; filter: ChunkFilter; afterSeq: number; limit: number },
  ) {
    return this.run.read((tx) => chunks.chunkVectorPage(tx, tenantId, q));
  }
  keywordChunks(tenantId: string, q: { terms: readonly string[]; filter: ChunkFilter; limit: number }) {
    return this.run.read((tx) => chunks.keywordChunks(tx, tenantId, q));
  }
  chunksBySeq(tenantId: string, seqs: readonly number[]) {
    return this.run.read((tx) => chunks.chunksBySeq(tx, tenantId, seqs));
  }
  countChunks(tenantId: string, taskId?: string) {
    return this.run.read((tx) => chunks.countChunks(tx, tenantId, taskId));
  }
}
