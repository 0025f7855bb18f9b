import { EventEmitter } from "node:events";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type Database from "better-sqlite3";
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
import { type InboxDbRow, toInbox } from "../rows.ts";
import type { Tx } from "../sql/tx.ts";
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
import { type Ctx, openDatabase, Sql } from "./db.ts";
import * as engine from "./engine-ops.ts";
import { GroupCommit } from "./group-commit.ts";
import { migrate } from "./migrate.ts";
import * as queue from "./queue-ops.ts";
import { sqliteTx } from "./tx.ts";

export interface SqliteStoreOptions {
  /** A file path, or `:memory:` for throwaway tests. */
  path: string;
  clock?: Clock;
  ids?: IdGenerator;
}

/**
 * The embedded store. One process owns the file. Reads run at once on the connection;
 * writes go through group commit, so the writes of one tick share one transaction and one
 * fsync. Every write operation runs whole inside its own savepoint.
 */
export class SqliteStore implements Store {
  readonly db: Database.Database;
  private readonly c: Ctx;
  /** The shared operations' view of the connection (`c`). */
  private readonly t: Tx;
  private readonly writer: GroupCommit;
  private readonly signals = new EventEmitter();
  private readonly taskEventListeners = new Set<(tenantId: string, seq: number) => void>();
  /** Set when a write failed for lack of disk space; cleared once a probe write commits. */
  private storageFull = false;

  constructor(opts: SqliteStoreOptions) {
    if (opts.path !== ":memory:") mkdirSync(dirname(opts.path), { recursive: true });
    this.db = openDatabase(opts.path);
    const clock = opts.clock ?? systemClock;
    this.c = { sql: new Sql(this.db), clock, ids: opts.ids ?? ulidGenerator(clock) };
    this.t = sqliteTx(this.c);
    this.writer = new GroupCommit(this.db);
    this.signals.setMaxListeners(0);
  }

  private write<T>(op: (c: Ctx) => T | Promise<T>, signal?: "work" | "events"): Promise<T> {
    let appended: Ctx["appended"];
    let wake = false;
    return this.writer
      .run(async () => {
        // Operations run one at a time, so the shared context collects this one's events alone;
        // an operation that throws is rolled back and never reaches the lines below.
        this.c.appended = undefined;
        this.c.wake = false;
        const v = await op(this.c);
        appended = this.c.appended;
        wake = this.c.wake;
        return v;
      })
      .then((v) => {
        if (signal) this.signals.emit(signal);
        if (wake && signal !== "work") this.signals.emit("work");
        // Resolved only after COMMIT: the events announced here are durable.
        if (appended) this.announce(appended);
        return v;
      })
      .catch((err: unknown) => {
        if (err instanceof LonghaulError && err.code === "STORAGE_FULL") this.storageFull = true;
        throw err;
      });
  }

  /** A shared operation as a write: in its savepoint of the group commit's transaction. */
  private writeTx<T>(op: (tx: Tx) => Promise<T>, signal?: "work" | "events"): Promise<T> {
    return this.write(() => op(this.t), signal);
  }

  /**
   * A read on the connection, once no group-commit batch is open: operations of a batch are
   * awaited one by one, and a read run in between would see writes not yet committed.
   */
  private async read<T>(op: (c: Ctx) => T | Promise<T>): Promise<T> {
    const open = this.writer.settled();
    if (open) await open;
    return op(this.c);
  }

  private announce(events: NonNullable<Ctx["appended"]>): void {
    for (const [tenantId, seq] of events) {
      for (const fn of this.taskEventListeners) {
        try {
          fn(tenantId, seq);
        } catch (err) {
          // The write has committed; a listener's failure must not turn it into a rejection.
          process.emitWarning(`task event listener failed: ${(err as Error).message}`);
        }
      }
    }
  }

  /** Write transactions committed so far (group commit folds a tick's writes into one). */
  get commits(): number {
    return this.writer.commits;
  }

  /** Calls `fn` after a commit that may have made work due. */
  onWork(fn: () => void): () => void {
    this.signals.on("work", fn);
    return () => this.signals.off("work", fn);
  }

  /**
   * "full" from the first write refused for lack of disk space until a write commits again.
   * Only a write shows that space is back, so while full each call tries one that needs room
   * for a typical operation (a 64 KiB row, deleted again), not just a page rewritten in place.
   */
  async health(): Promise<"ok" | "degraded" | "full"> {
    if (!this.db.open) return "degraded";
    if (!this.storageFull) return "ok";
    try {
      await this.write(({ sql, clock }) => {
        sql.run(
          "INSERT INTO meta (key, value) VALUES ('storage_probe', hex(randomblob(32768))) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        );
        sql.run("DELETE FROM meta WHERE key = 'storage_probe'");
        sql.run(
          "INSERT INTO meta (key, value) VALUES ('storage_probe_at', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
          String(clock.now()),
        );
      });
      this.storageFull = false;
      return "ok";
    } catch {
      return this.storageFull ? "full" : "degraded";
    }
  }
  async migrate() {
    return migrate(this.db, this.c.clock.now());
  }
  async close() {
    await this.writer.run(() => undefined);
    this.db.close();
  }

  createTenant(t: { id?: string; name: string; keyHash: string; keyHint?: string; quotas?: Quotas }) {
    return this.writeTx((tx) => tenants.createTenant(tx, t));
  }
  ensureTenant(t: { id: string; name: string; keyHash: string }) {
    return this.writeTx((tx) => tenants.ensureTenant(tx, t));
  }
  async tenantByKeyHash(keyHash: string) {
    return this.read(() => tenants.tenantByKeyHash(this.t, keyHash));
  }
  async getTenant(id: string) {
    return this.read(() => tenants.tenant(this.t, id));
  }
  async listTenants() {
    return this.read(() => tenants.listTenants(this.t));
  }
  updateTenant(id: string, patch: { name?: string; quotas?: Quotas }) {
    return this.writeTx((tx) => tenants.updateTenant(tx, id, patch), "work");
  }
  addApiKey(tenantId: string, keyHash: string, hint: string) {
    return this.writeTx((tx) => tenants.addApiKey(tx, tenantId, keyHash, hint));
  }
  revokeApiKey(tenantId: string, keyId: string) {
    return this.writeTx((tx) => tenants.revokeApiKey(tx, tenantId, keyId));
  }
  async listApiKeys(tenantId: string) {
    return this.read(() => tenants.listApiKeys(this.t, tenantId));
  }
  async usage(tenantId: string, days: number) {
    return this.read(() => tenants.usage(this.t, tenantId, days));
  }

  submitTask(t: NewTask) {
    return this.writeTx((tx) => tasks.submitTask(tx, t), "work");
  }
  async getTask(tenantId: string, taskId: string) {
    return this.read(() => tasks.getTask(this.t, tenantId, taskId));
  }
  async listTasks(tenantId: string, q: TaskQuery) {
    return this.read(() => tasks.listTasks(this.t, tenantId, q));
  }
  cancelTask(tenantId: string, taskId: string) {
    return this.writeTx((tx) => tasks.cancelTask(tx, tenantId, taskId), "work");
  }

  async loadForAdvance(taskId: string) {
    return this.read(() => shared.loadForAdvance(this.t, taskId));
  }
  beginAdvance(lease: Lease, taskId: string) {
    return this.write((c) => engine.beginAdvance(c, lease, taskId));
  }
  acquireJobSlot(lease: Lease, jobId: string) {
    return this.write((c) => engine.acquireJobSlot(c, lease, jobId));
  }
  storeRunOutcome(lease: Lease, taskId: string, outcome: RunOutcome) {
    return this.write((c) => engine.storeRunOutcome(c, lease, taskId, outcome));
  }
  finishAdvance(lease: Lease, taskId: string, result: AdvanceResult) {
    return this.write((c) => engine.finishAdvance(c, lease, taskId, result), "work");
  }
  async getJob(jobId: string) {
    return this.read(() => shared.getJob(this.t, jobId));
  }
  recordJobCreated(lease: Lease, jobId: string, externalId: string, status: JobStatus) {
    return this.write((c) => engine.recordJobCreated(c, lease, jobId, externalId, status), "work");
  }
  failJob(lease: Lease, jobId: string, error: ErrorInfo) {
    return this.write((c) => engine.failJob(c, lease, jobId, error), "work");
  }
  recordEvent(e: NewInboxEvent) {
    return this.writeTx((tx) => inbox.recordEvent(tx, e), "work");
  }
  async getInboxEvent(id: string) {
    return this.read(() => inbox.getInboxEvent(this.t, id));
  }
  applyJobEvent(lease: Lease, inboxId: string, provider: string, event: ProviderEvent) {
    return this.write((c) => engine.applyJobEvent(c, lease, inboxId, provider, event), "work");
  }
  rejectInboxEvent(lease: Lease, inboxId: string, note: string) {
    return this.writeTx((tx) => inbox.rejectInboxEvent(tx, lease, inboxId, note));
  }
  recordPoll(
    lease: Lease,
    jobId: string,
    event: NewInboxEvent | null,
    next: { runAt: number; attempt: number } | null,
  ) {
    return this.write((c) => engine.recordPoll(c, lease, jobId, event, next), "work");
  }
  pruneDeliveries(before: number) {
    return this.writeTx((tx) => inbox.pruneDeliveries(tx, before));
  }
  pruneSignals(before: number) {
    return this.writeTx((tx) => inbox.pruneSignals(tx, before));
  }
  pruneInbox(before: number) {
    return this.writeTx((tx) => inbox.pruneInbox(tx, before));
  }
  async listInbox(q: { source?: string; status?: InboxStatus; limit: number; cursor?: string }) {
    return this.read(() => inbox.listInbox(this.t, q));
  }
  replayInboxEvent(id: string) {
    return this.writeTx((tx) => inbox.replayInboxEvent(tx, id), "work");
  }
  fireTimeout(lease: Lease, taskId: string, stepId: string) {
    return this.writeTx((tx) => waits.fireTimeout(tx, lease, taskId, stepId), "work");
  }
  registerWait(lease: Lease, taskId: string, wait: WaitRequest) {
    return this.writeTx((tx) => waits.registerWait(tx, lease, taskId, wait), "work");
  }
  markHandedOff(lease: Lease, taskId: string, stepId: string) {
    return this.writeTx((tx) => waits.markHandedOff(tx, lease, taskId, stepId));
  }
  async stepForToken(tenantId: string, taskId: string, stepId: string) {
    return this.read(() => waits.stepForToken(this.t, tenantId, taskId, stepId));
  }
  completeCallback(d: CallbackDelivery) {
    return this.writeTx((tx) => waits.completeCallback(tx, d), "work");
  }
  decideApproval(d: ApprovalDecisionInput) {
    return this.writeTx((tx) => waits.decideApproval(tx, d), "work");
  }
  async approvalDecisions(taskId: string, stepId: string) {
    return this.read(() => waits.approvalDecisions(this.t, taskId, stepId));
  }
  recordSignal(s: { tenantId: string; name: string; data: unknown; clientId: string | null }) {
    return this.writeTx((tx) => waits.recordSignal(tx, s), "work");
  }
  fireReminder(lease: Lease, taskId: string, stepId: string, type: "reminder" | "escalation") {
    return this.writeTx((tx) => waits.fireReminder(tx, lease, taskId, stepId, type));
  }

  enqueue(items: NewWorkItem[]) {
    return this.write((c) => queue.enqueue(c, items), "work");
  }
  claim(owner: string, limit: number, leaseMs: number) {
    return this.write((c) => queue.claim(c, owner, limit, leaseMs));
  }
  complete(lease: Lease) {
    return this.write((c) => queue.complete(c, lease));
  }
  extendLease(lease: Lease, leaseMs: number) {
    return this.write((c) => queue.extendLease(c, lease, leaseMs));
  }
  fail(lease: Lease, error: string, retryAt: number) {
    return this.write((c) => queue.fail(c, lease, error, retryAt), "work");
  }
  recoverExpiredLeases() {
    return this.write((c) => queue.recoverExpiredLeases(c), "work");
  }
  releaseOrphanedLeases() {
    return this.write((c) => queue.releaseOrphanedLeases(c), "work");
  }
  async nextRunAt() {
    return this.read((c) => queue.nextRunAt(c));
  }
  async deadItems(limit: number) {
    return this.read((c) => queue.deadItems(c, limit));
  }

  async taskEvents(tenantId: string, afterSeq: number, limit: number, taskId?: string) {
    return this.read(() => tasks.taskEvents(this.t, tenantId, afterSeq, limit, taskId));
  }
  async getMeta(key: string) {
    return this.read(
      (c) => c.sql.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", key)?.value ?? null,
    );
  }
  putMetaIfAbsent(key: string, value: string) {
    return this.write(({ sql }) => {
      sql.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", key, value);
      return sql.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", key)!.value;
    });
  }

  // ── realtime ──
  onTaskEvents(fn: (tenantId: string, seq: number) => void): () => void {
    this.taskEventListeners.add(fn);
    return () => this.taskEventListeners.delete(fn);
  }
  async lastTaskEventSeq(tenantId: string) {
    return this.read(
      (c) =>
        c.sql.get<{ s: number | null }>("SELECT MAX(seq) AS s FROM task_events WHERE tenant_id = ?", tenantId)
          ?.s ?? 0,
    );
  }

  // ── outbound ──
  createWebhookEndpoint(e: NewWebhookEndpoint) {
    return this.writeTx((tx) => outbound.createEndpoint(tx, e));
  }
  async listWebhookEndpoints(tenantId: string) {
    return this.read(() => outbound.listEndpoints(this.t, tenantId));
  }
  deleteWebhookEndpoint(tenantId: string, endpointId: string) {
    return this.writeTx((tx) => outbound.deleteEndpoint(tx, tenantId, endpointId));
  }
  async listWebhookDeliveries(
    tenantId: string,
    endpointId: string,
    q: { limit: number; cursor?: string | undefined; state?: DeliveryState | undefined },
  ) {
    return this.read(() => outbound.listDeliveries(this.t, tenantId, endpointId, q));
  }
  replayWebhookDelivery(tenantId: string, endpointId: string, deliveryId: string) {
    return this.writeTx((tx) => outbound.replayDelivery(tx, tenantId, endpointId, deliveryId), "work");
  }
  rotateWebhookEndpointSecret(
    tenantId: string,
    endpointId: string,
    secret: string,
    previousOverlapMs: number | null,
  ) {
    return this.writeTx((tx) => outbound.rotateSecret(tx, tenantId, endpointId, secret, previousOverlapMs));
  }
  resealSecrets(reseal: (stored: string) => string, metaKeys: readonly string[]) {
    return this.writeTx((tx) => outbound.resealSecrets(tx, reseal, metaKeys));
  }
  async deliveryForAttempt(deliveryId: string) {
    return this.read(() => outbound.deliveryForAttempt(this.t, deliveryId));
  }
  recordDeliveryAttempt(lease: Lease, deliveryId: string, result: DeliveryAttemptResult) {
    return this.writeTx((tx) => outbound.recordAttempt(tx, lease, deliveryId, result), "work");
  }

  // ── dashboard ──
  async inboxForJobs(provider: string, externalIds: string[]) {
    if (externalIds.length === 0) return [];
    // One statement for any number of ids; the IN over json_each still probes inbox_by_job.
    await this.writer.settled();
    return this.c.sql
      .all<InboxDbRow>(
        `SELECT * FROM inbox_events
          WHERE provider = ? AND job_external_id IN (SELECT value FROM json_each(?))
          ORDER BY received_at, id`,
        provider,
        JSON.stringify(externalIds),
      )
      .map(toInbox);
  }
}
