import { EventEmitter } from "node:events";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type Database from "better-sqlite3";
import { type Clock, systemClock } from "../../core/clock.ts";
import type { ErrorInfo } from "../../core/errors.ts";
import { type IdGenerator, ulidGenerator } from "../../core/ids.ts";
import type { JobStatus } from "../../core/job-state.ts";
import type { RunOutcome } from "../../core/replay.ts";
import type { WaitRequest } from "../../core/wait.ts";
import type { ProviderEvent } from "../../providers/provider.ts";
import type {
  AdvanceResult,
  ApprovalDecisionInput,
  CallbackDelivery,
  InboxStatus,
  Lease,
  NewInboxEvent,
  NewTask,
  NewWorkItem,
  Store,
  TaskQuery,
  TenantRow,
} from "../store.ts";
import { type Ctx, openDatabase, Sql } from "./db.ts";
import * as engine from "./engine-ops.ts";
import { GroupCommit } from "./group-commit.ts";
import { migrate } from "./migrate.ts";
import * as queue from "./queue-ops.ts";
import * as tasks from "./task-ops.ts";
import * as waits from "./wait-ops.ts";

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
  private readonly writer: GroupCommit;
  private readonly signals = new EventEmitter();

  constructor(opts: SqliteStoreOptions) {
    if (opts.path !== ":memory:") mkdirSync(dirname(opts.path), { recursive: true });
    this.db = openDatabase(opts.path);
    const clock = opts.clock ?? systemClock;
    this.c = { sql: new Sql(this.db), clock, ids: opts.ids ?? ulidGenerator(clock) };
    this.writer = new GroupCommit(this.db);
    this.signals.setMaxListeners(0);
  }

  private write<T>(op: (c: Ctx) => T, signal?: "work" | "events"): Promise<T> {
    return this.writer
      .run(() => op(this.c))
      .then((v) => {
        if (signal) this.signals.emit(signal);
        return v;
      });
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

  async migrate() {
    return migrate(this.db, this.c.clock.now());
  }
  async close() {
    await this.writer.run(() => undefined);
    this.db.close();
  }

  createTenant(t: { id?: string; name: string; keyHash: string }): Promise<TenantRow> {
    return this.write(({ sql, clock, ids }) => {
      const id = t.id ?? ids.next("tn");
      const now = clock.now();
      sql.run("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)", id, t.name, now);
      sql.run("INSERT INTO api_keys (key_hash, tenant_id, created_at) VALUES (?, ?, ?)", t.keyHash, id, now);
      return { id, name: t.name, createdAt: now };
    });
  }
  ensureTenant(t: { id: string; name: string; keyHash: string }): Promise<TenantRow> {
    return this.write(({ sql, clock }) => {
      const now = clock.now();
      sql.run(
        "INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
        t.id,
        t.name,
        now,
      );
      sql.run(
        "INSERT INTO api_keys (key_hash, tenant_id, created_at) VALUES (?, ?, ?) ON CONFLICT (key_hash) DO NOTHING",
        t.keyHash,
        t.id,
        now,
      );
      const r = sql.get<{ id: string; name: string; created_at: number }>(
        "SELECT * FROM tenants WHERE id = ?",
        t.id,
      )!;
      return { id: r.id, name: r.name, createdAt: r.created_at };
    });
  }
  async tenantByKeyHash(keyHash: string): Promise<TenantRow | null> {
    const r = this.c.sql.get<{ id: string; name: string; created_at: number }>(
      `SELECT t.* FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
      keyHash,
    );
    return r ? { id: r.id, name: r.name, createdAt: r.created_at } : null;
  }

  submitTask(t: NewTask) {
    return this.write((c) => tasks.submitTask(c, t), "work");
  }
  async getTask(tenantId: string, taskId: string) {
    return tasks.getTask(this.c, tenantId, taskId);
  }
  async listTasks(tenantId: string, q: TaskQuery) {
    return tasks.listTasks(this.c, tenantId, q);
  }
  cancelTask(tenantId: string, taskId: string) {
    return this.write((c) => tasks.cancelTask(c, tenantId, taskId), "work");
  }

  async loadForAdvance(taskId: string) {
    return engine.loadForAdvance(this.c, taskId);
  }
  beginAdvance(lease: Lease, taskId: string) {
    return this.write((c) => engine.beginAdvance(c, lease, taskId));
  }
  storeRunOutcome(lease: Lease, taskId: string, outcome: RunOutcome) {
    return this.write((c) => engine.storeRunOutcome(c, lease, taskId, outcome));
  }
  finishAdvance(lease: Lease, taskId: string, result: AdvanceResult) {
    return this.write((c) => engine.finishAdvance(c, lease, taskId, result), "work");
  }
  async getJob(jobId: string) {
    return engine.getJob(this.c, jobId);
  }
  recordJobCreated(lease: Lease, jobId: string, externalId: string, status: JobStatus) {
    return this.write((c) => engine.recordJobCreated(c, lease, jobId, externalId, status), "work");
  }
  failJob(lease: Lease, jobId: string, error: ErrorInfo) {
    return this.write((c) => engine.failJob(c, lease, jobId, error), "work");
  }
  recordEvent(e: NewInboxEvent) {
    return this.write((c) => engine.recordEvent(c, e), "work");
  }
  async getInboxEvent(id: string) {
    return engine.getInboxEvent(this.c, id);
  }
  applyJobEvent(lease: Lease, inboxId: string, provider: string, event: ProviderEvent) {
    return this.write((c) => engine.applyJobEvent(c, lease, inboxId, provider, event), "work");
  }
  rejectInboxEvent(lease: Lease, inboxId: string, note: string) {
    return this.write((c) => engine.rejectInboxEvent(c, lease, inboxId, note));
  }
  recordPoll(
    lease: Lease,
    jobId: string,
    event: NewInboxEvent | null,
    next: { runAt: number; attempt: number } | null,
  ) {
    return this.write((c) => engine.recordPoll(c, lease, jobId, event, next), "work");
  }
  pruneInbox(before: number) {
    return this.write((c) => engine.pruneInbox(c, before));
  }
  async listInbox(q: { source?: string; status?: InboxStatus; limit: number; cursor?: string }) {
    return engine.listInbox(this.c, q);
  }
  replayInboxEvent(id: string) {
    return this.write((c) => engine.replayInboxEvent(c, id), "work");
  }
  fireTimeout(lease: Lease, taskId: string, stepId: string) {
    return this.write((c) => waits.fireTimeout(c, lease, taskId, stepId), "work");
  }
  registerWait(lease: Lease, taskId: string, wait: WaitRequest) {
    return this.write((c) => waits.registerWait(c, lease, taskId, wait), "work");
  }
  markHandedOff(lease: Lease, taskId: string, stepId: string) {
    return this.write((c) => waits.markHandedOff(c, lease, taskId, stepId));
  }
  async stepForToken(tenantId: string, taskId: string, stepId: string) {
    return waits.stepForToken(this.c, tenantId, taskId, stepId);
  }
  completeCallback(d: CallbackDelivery) {
    return this.write((c) => waits.completeCallback(c, d), "work");
  }
  decideApproval(d: ApprovalDecisionInput) {
    return this.write((c) => waits.decideApproval(c, d), "work");
  }
  async approvalDecisions(taskId: string, stepId: string) {
    return waits.approvalDecisions(this.c, taskId, stepId);
  }
  recordSignal(s: { tenantId: string; name: string; data: unknown; clientId: string | null }) {
    return this.write((c) => waits.recordSignal(c, s), "work");
  }
  fireReminder(lease: Lease, taskId: string, stepId: string, type: "reminder" | "escalation") {
    return this.write((c) => waits.fireReminder(c, lease, taskId, stepId, type));
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
    return queue.nextRunAt(this.c);
  }
  async deadItems(limit: number) {
    return queue.deadItems(this.c, limit);
  }

  async taskEvents(tenantId: string, afterSeq: number, limit: number, taskId?: string) {
    return tasks.taskEvents(this.c, tenantId, afterSeq, limit, taskId);
  }
  async getMeta(key: string) {
    return this.c.sql.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", key)?.value ?? null;
  }
  putMetaIfAbsent(key: string, value: string) {
    return this.write(({ sql }) => {
      sql.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", key, value);
      return sql.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", key)!.value;
    });
  }
}
