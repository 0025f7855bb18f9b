import { randomUUID } from "node:crypto";
import type { Pool } from "pg";
import { type Clock, systemClock } from "../../core/clock.ts";
import { type ErrorInfo, LonghaulError } from "../../core/errors.ts";
import { type IdGenerator, ulidGenerator } from "../../core/ids.ts";
import type { JobStatus } from "../../core/job-state.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import type { Quotas } from "../../core/quotas.ts";
import type { RunOutcome } from "../../core/replay.ts";
import type { WaitRequest } from "../../core/wait.ts";
import * as shared from "../ops/engine-ops.ts";
import * as inbox from "../ops/inbox-ops.ts";
import * as outbound from "../ops/outbound-ops.ts";
import * as tasks from "../ops/task-ops.ts";
import * as tenants from "../ops/tenant-ops.ts";
import * as waits from "../ops/wait-ops.ts";
import type {
  AdvanceResult,
  ApprovalDecisionInput,
  CallbackDelivery,
  DeliveryAttemptResult,
  DeliveryState,
  InboxStatus,
  Lease,
  NewInboxEvent,
  NewTask,
  NewWebhookEndpoint,
  NewWorkItem,
  Store,
  TaskQuery,
} from "../store.ts";
import { claim } from "./claim.ts";
import * as engine from "./engine-ops.ts";
import { lastTaskEventSeq, latestSeqs } from "./event-log.ts";
import * as meta from "./meta-ops.ts";
import { migrate } from "./migrate.ts";
import { Notifier } from "./notifier.ts";
import { createPool, parseTarget } from "./pool.ts";
import * as queue from "./queue-ops.ts";
import { Transactions } from "./transactions.ts";
import { txOf } from "./tx.ts";

export interface PostgresStoreOptions {
  /** `postgres://…`; `?schema=` picks the schema (default `public`). */
  url: string;
  clock?: Clock;
  ids?: IdGenerator;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /** Shown in `pg_stat_activity`; an `application_name` in the URL wins. Default `longhaul`. */
  applicationName?: string;
}

const HEALTH_TIMEOUT_MS = 2000;

/**
 * The store for many processes on many machines (ARCHITECTURE §4.1). Every operation runs whole in
 * one transaction on a pooled connection, with the same semantics as the SQLite store; where
 * SQLite relies on one writer at a time, this one locks what it decides on (see README.md).
 * Work is claimed with `FOR UPDATE SKIP LOCKED`; commits wake workers and SSE streams on
 * every node through LISTEN/NOTIFY. A database that is down surfaces as STORE_UNAVAILABLE
 * (503), and the store recovers by itself when it is back.
 */
export class PostgresStore implements Store {
  readonly schema: string;
  private readonly pool: Pool;
  private readonly tx: Transactions;
  private readonly notifier: Notifier;
  private readonly clock: Clock;

  constructor(opts: PostgresStoreOptions) {
    const target = parseTarget(opts.url, opts.applicationName);
    this.schema = target.schema;
    this.clock = opts.clock ?? systemClock;
    this.pool = createPool(target, opts.poolSize ?? 10);
    const nodeId = randomUUID();
    this.notifier = new Notifier(target, nodeId, (tenantIds) =>
      this.tx.read((c) => latestSeqs(c, tenantIds)),
    );
    this.tx = new Transactions(
      this.pool,
      { clock: this.clock, ids: opts.ids ?? ulidGenerator(this.clock), target, nodeId },
      this.notifier,
    );
  }

  /** Calls `fn` after a commit, on any node, that may have made work due. */
  onWork(fn: () => void): () => void {
    return this.notifier.onWork(fn);
  }
  /**
   * Calls `fn(tenantId, seq)` once per task event appended on any node, after its commit.
   * After the LISTEN connection was down, one call per tenant stands for the events it missed.
   */
  onTaskEvents(fn: (tenantId: string, seq: number) => void): () => void {
    return this.notifier.onTaskEvents(fn);
  }
  /**
   * "degraded" when the database does not answer `SELECT 1` promptly, or LISTEN is down;
   * "full" from a write refused with disk_full until a write commits again. Only a write
   * shows that space is back, so while full each call tries one (see probeWrite).
   */
  async health(): Promise<"ok" | "degraded" | "full"> {
    if (this.tx.storageFull) return this.probeWrite();
    const probe = this.pool.query("SELECT 1");
    probe.catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"degraded">((resolve) => {
      timer = setTimeout(() => resolve("degraded"), HEALTH_TIMEOUT_MS);
    });
    const answer = probe.then(
      () => (this.notifier.healthy ? ("ok" as const) : ("degraded" as const)),
      () => "degraded" as const,
    );
    try {
      return await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async probeWrite(): Promise<"ok" | "degraded" | "full"> {
    // Room for a typical operation, not just a row version on a page with space left: a
    // 64 KiB value that does not compress, written and deleted again.
    const write = this.tx.write(async (c) => {
      await c.sql.run(
        `INSERT INTO meta (key, value)
         SELECT 'storage_probe', string_agg(md5(random()::text), '') FROM generate_series(1, 2048)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      );
      await c.sql.run("DELETE FROM meta WHERE key = 'storage_probe'");
      await c.sql.run(
        `INSERT INTO meta (key, value) VALUES ('storage_probe_at', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
        [String(c.clock.now())],
      );
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"degraded">((resolve) => {
      timer = setTimeout(() => resolve("degraded"), HEALTH_TIMEOUT_MS);
    });
    const answer = write.then(
      () => {
        this.tx.storageFull = false;
        return this.notifier.healthy ? ("ok" as const) : ("degraded" as const);
      },
      (err: unknown) =>
        err instanceof LonghaulError && err.code === "STORAGE_FULL"
          ? ("full" as const)
          : ("degraded" as const),
    );
    try {
      return await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async migrate() {
    return migrate(this.pool, this.schema, this.clock.now());
  }
  async close() {
    await this.notifier.stop();
    await this.pool.end();
  }

  createTenant(t: { id?: string; name: string; keyHash: string; keyHint?: string; quotas?: Quotas }) {
    return this.tx.write((c) => tenants.createTenant(txOf(c), t));
  }
  ensureTenant(t: { id: string; name: string; keyHash: string }) {
    return this.tx.write((c) => tenants.ensureTenant(txOf(c), t));
  }
  tenantByKeyHash(keyHash: string) {
    return this.tx.read((c) => tenants.tenantByKeyHash(txOf(c), keyHash));
  }
  getTenant(id: string) {
    return this.tx.read((c) => tenants.tenant(txOf(c), id));
  }
  listTenants() {
    return this.tx.read((c) => tenants.listTenants(txOf(c)));
  }
  updateTenant(id: string, patch: { name?: string; quotas?: Quotas }) {
    return this.tx.write((c) => tenants.updateTenant(txOf(c), id, patch));
  }
  addApiKey(tenantId: string, keyHash: string, hint: string) {
    return this.tx.write((c) => tenants.addApiKey(txOf(c), tenantId, keyHash, hint));
  }
  revokeApiKey(tenantId: string, keyId: string) {
    return this.tx.write((c) => tenants.revokeApiKey(txOf(c), tenantId, keyId));
  }
  listApiKeys(tenantId: string) {
    return this.tx.read((c) => tenants.listApiKeys(txOf(c), tenantId));
  }
  usage(tenantId: string, days: number) {
    return this.tx.snapshot((c) => tenants.usage(txOf(c), tenantId, days));
  }

  submitTask(t: NewTask) {
    return this.tx.write((c) => tasks.submitTask(txOf(c), t));
  }
  getTask(tenantId: string, taskId: string) {
    return this.tx.snapshot((c) => tasks.getTask(txOf(c), tenantId, taskId));
  }
  listTasks(tenantId: string, q: TaskQuery) {
    return this.tx.read((c) => tasks.listTasks(txOf(c), tenantId, q));
  }
  cancelTask(tenantId: string, taskId: string) {
    return this.tx.write((c) => tasks.cancelTask(txOf(c), tenantId, taskId));
  }

  loadForAdvance(taskId: string) {
    return this.tx.snapshot((c) => shared.loadForAdvance(txOf(c), taskId));
  }
  beginAdvance(lease: Lease, taskId: string) {
    return this.tx.write((c) => engine.beginAdvance(c, lease, taskId));
  }
  acquireJobSlot(lease: Lease, jobId: string) {
    return this.tx.write((c) => engine.acquireJobSlot(c, lease, jobId));
  }
  storeRunOutcome(lease: Lease, taskId: string, outcome: RunOutcome) {
    return this.tx.write((c) => engine.storeRunOutcome(c, lease, taskId, outcome));
  }
  finishAdvance(lease: Lease, taskId: string, result: AdvanceResult) {
    return this.tx.write((c) => engine.finishAdvance(c, lease, taskId, result));
  }
  getJob(jobId: string) {
    return this.tx.read((c) => shared.getJob(txOf(c), jobId));
  }
  recordJobCreated(lease: Lease, jobId: string, externalId: string, status: JobStatus) {
    return this.tx.write((c) => engine.recordJobCreated(c, lease, jobId, externalId, status));
  }
  failJob(lease: Lease, jobId: string, error: ErrorInfo) {
    return this.tx.write((c) => engine.failJob(c, lease, jobId, error));
  }
  recordEvent(e: NewInboxEvent) {
    return this.tx.write((c) => inbox.recordEvent(txOf(c), e));
  }
  getInboxEvent(id: string) {
    return this.tx.read((c) => inbox.getInboxEvent(txOf(c), id));
  }
  applyJobEvent(lease: Lease, inboxId: string, provider: string, event: ProviderEvent) {
    return this.tx.write((c) => engine.applyJobEvent(c, lease, inboxId, provider, event));
  }
  rejectInboxEvent(lease: Lease, inboxId: string, note: string) {
    return this.tx.write((c) => inbox.rejectInboxEvent(txOf(c), lease, inboxId, note));
  }
  recordPoll(
    lease: Lease,
    jobId: string,
    event: NewInboxEvent | null,
    next: { runAt: number; attempt: number } | null,
  ) {
    return this.tx.write((c) => engine.recordPoll(c, lease, jobId, event, next));
  }
  pruneDeliveries(before: number) {
    return this.tx.write((c) => inbox.pruneDeliveries(txOf(c), before));
  }
  pruneSignals(before: number) {
    return this.tx.write((c) => inbox.pruneSignals(txOf(c), before));
  }
  pruneInbox(before: number) {
    return this.tx.write((c) => inbox.pruneInbox(txOf(c), before));
  }
  listInbox(q: { source?: string; status?: InboxStatus; limit: number; cursor?: string }) {
    return this.tx.read((c) => inbox.listInbox(txOf(c), q));
  }
  replayInboxEvent(id: string) {
    return this.tx.write((c) => inbox.replayInboxEvent(txOf(c), id));
  }

  fireTimeout(lease: Lease, taskId: string, stepId: string) {
    return this.tx.write((c) => waits.fireTimeout(txOf(c), lease, taskId, stepId));
  }
  registerWait(lease: Lease, taskId: string, wait: WaitRequest) {
    return this.tx.write((c) => waits.registerWait(txOf(c), lease, taskId, wait));
  }
  markHandedOff(lease: Lease, taskId: string, stepId: string) {
    return this.tx.write((c) => waits.markHandedOff(txOf(c), lease, taskId, stepId));
  }
  stepForToken(tenantId: string, taskId: string, stepId: string) {
    return this.tx.snapshot((c) => waits.stepForToken(txOf(c), tenantId, taskId, stepId));
  }
  completeCallback(d: CallbackDelivery) {
    return this.tx.write((c) => waits.completeCallback(txOf(c), d));
  }
  decideApproval(d: ApprovalDecisionInput) {
    return this.tx.write((c) => waits.decideApproval(txOf(c), d));
  }
  approvalDecisions(taskId: string, stepId: string) {
    return this.tx.read((c) => waits.approvalDecisions(txOf(c), taskId, stepId));
  }
  recordSignal(s: { tenantId: string; name: string; data: unknown; clientId: string | null }) {
    return this.tx.write((c) => waits.recordSignal(txOf(c), s));
  }
  fireReminder(lease: Lease, taskId: string, stepId: string, type: "reminder" | "escalation") {
    return this.tx.write((c) => waits.fireReminder(txOf(c), lease, taskId, stepId, type));
  }

  enqueue(items: NewWorkItem[]) {
    return this.tx.write((c) => queue.enqueue(c, items));
  }
  claim(owner: string, limit: number, leaseMs: number) {
    return this.tx.statement((c) => claim(c, owner, limit, leaseMs));
  }
  complete(lease: Lease) {
    return this.tx.statement((c) => queue.complete(c, lease));
  }
  extendLease(lease: Lease, leaseMs: number) {
    return this.tx.write((c) => queue.extendLease(c, lease, leaseMs));
  }
  fail(lease: Lease, error: string, retryAt: number) {
    return this.tx.write((c) => queue.fail(c, lease, error, retryAt));
  }
  recoverExpiredLeases() {
    return this.tx.write((c) => queue.recoverExpiredLeases(c));
  }
  /** Nothing: other nodes may be alive and holding their leases; expiry hands them back. */
  async releaseOrphanedLeases() {
    return 0;
  }
  nextRunAt() {
    return this.tx.read((c) => queue.nextRunAt(c));
  }
  deadItems(limit: number) {
    return this.tx.read((c) => queue.deadItems(c, limit));
  }

  taskEvents(tenantId: string, afterSeq: number, limit: number, taskId?: string) {
    return this.tx.read((c) => tasks.taskEvents(txOf(c), tenantId, afterSeq, limit, taskId));
  }
  getMeta(key: string) {
    return this.tx.read((c) => meta.getMeta(c, key));
  }
  putMetaIfAbsent(key: string, value: string) {
    return this.tx.write((c) => meta.putMetaIfAbsent(c, key, value));
  }

  lastTaskEventSeq(tenantId: string) {
    return this.tx.read((c) => lastTaskEventSeq(c, tenantId));
  }

  createWebhookEndpoint(e: NewWebhookEndpoint) {
    return this.tx.write((c) => outbound.createEndpoint(txOf(c), e));
  }
  listWebhookEndpoints(tenantId: string) {
    return this.tx.read((c) => outbound.listEndpoints(txOf(c), tenantId));
  }
  deleteWebhookEndpoint(tenantId: string, endpointId: string) {
    return this.tx.write((c) => outbound.deleteEndpoint(txOf(c), tenantId, endpointId));
  }
  listWebhookDeliveries(
    tenantId: string,
    endpointId: string,
    q: { limit: number; cursor?: string | undefined; state?: DeliveryState | undefined },
  ) {
    return this.tx.snapshot((c) => outbound.listDeliveries(txOf(c), tenantId, endpointId, q));
  }
  replayWebhookDelivery(tenantId: string, endpointId: string, deliveryId: string) {
    return this.tx.write((c) => outbound.replayDelivery(txOf(c), tenantId, endpointId, deliveryId));
  }
  rotateWebhookEndpointSecret(
    tenantId: string,
    endpointId: string,
    secret: string,
    previousOverlapMs: number | null,
  ) {
    return this.tx.write((c) =>
      outbound.rotateSecret(txOf(c), tenantId, endpointId, secret, previousOverlapMs),
    );
  }
  resealSecrets(reseal: (stored: string) => string, metaKeys: readonly string[]) {
    return this.tx.write((c) => outbound.resealSecrets(txOf(c), reseal, metaKeys));
  }
  deliveryForAttempt(deliveryId: string) {
    return this.tx.snapshot((c) => outbound.deliveryForAttempt(txOf(c), deliveryId));
  }
  recordDeliveryAttempt(lease: Lease, deliveryId: string, result: DeliveryAttemptResult) {
    return this.tx.write((c) => outbound.recordAttempt(txOf(c), lease, deliveryId, result));
  }

  inboxForJobs(provider: string, externalIds: string[]) {
    return this.tx.read((c) => engine.inboxForJobs(c, provider, externalIds));
  }
}
