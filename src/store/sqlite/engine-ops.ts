import type { ErrorInfo } from "../../core/errors.ts";
import { isTerminalJob, type JobStatus } from "../../core/job-state.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import { overBudget } from "../../core/quotas.ts";
import type { RunOutcome } from "../../core/replay.ts";
import { isTerminalTask } from "../../core/task-state.ts";
import { admitTokens } from "../budget.ts";
import { jobEndCounts, jobEventEffect } from "../job-rules.ts";
import { json } from "../json.ts";
import { inboxSql, markParams, recordEvent } from "../ops/inbox-ops.ts";
import { type JobDbRow, toJob } from "../rows.ts";
import type { AdvanceResult, ApplyOutcome, InboxStatus, Lease, NewInboxEvent } from "../store.ts";
import { advanceItem, applyItem, PARK_MS, pollItem } from "../work-items.ts";
import type { Ctx } from "./db.ts";
import { emit } from "./event-log.ts";
import { assertLease, complete, enqueue, park } from "./queue-ops.ts";
import { setTaskStatus, taskRow } from "./task-sync.ts";
import { countUsage, slotsInUse, tenant, wakeParked } from "./tenant-sync.ts";
import { sqliteTx } from "./tx.ts";
import { endWait } from "./wait-sync.ts";

export function beginAdvance(c: Ctx, lease: Lease, taskId: string): "started" | "ended" | "parked" {
  assertLease(c, lease);
  const task = taskRow(c, taskId);
  if (!task || isTerminalTask(task.status)) {
    complete(c, lease);
    return "ended";
  }
  // ARCHITECTURE §4.6: a new task of a tenant at its job limit (or over a parking budget) waits as pending.
  if (task.status === "pending" && !hasRoom(c, task.tenantId)) {
    park(c, lease, c.clock.now() + PARK_MS);
    return "parked";
  }
  if (task.status !== "running") setTaskStatus(c, task, "running");
  return "started";
}

function hasRoom(c: Ctx, tenantId: string): boolean {
  const t = tenant(c, tenantId);
  if (!t) return true;
  const q = t.quotas;
  if (q.budget_policy !== "reject" && overBudget(q, t.tokensThisPeriod)) return false;
  return q.max_concurrent_jobs == null || slotsInUse(c, tenantId) < q.max_concurrent_jobs;
}

/**
 * Admits a job under its tenant's quotas before it is created at the provider. `ok`: go on
 * (the job now holds a slot). `parked`: the dispatch item waits, woken when a slot frees.
 * `rejected`: the tenant's token budget of this period is spent, with the `reject` policy.
 * Under a token budget the job reserves its declared max tokens (see `admitTokens`).
 */
export function acquireJobSlot(c: Ctx, lease: Lease, jobId: string): "ok" | "parked" | "rejected" {
  assertLease(c, lease);
  const j = c.sql.get<{ tenant_id: string; slot: number; max_tokens: number | null }>(
    "SELECT tenant_id, slot, max_tokens FROM jobs WHERE id = ?",
    jobId,
  );
  if (!j || j.slot === 1) return "ok";
  const t = tenant(c, j.tenant_id);
  const q = t?.quotas ?? {};
  const tokens = t ? admitTokens(t, j.max_tokens) : { verdict: "ok" as const, reserve: 0 };
  if (tokens.verdict !== "ok") {
    if (tokens.verdict === "parked") park(c, lease, c.clock.now() + PARK_MS);
    return tokens.verdict;
  }
  if (q.max_concurrent_jobs != null && slotsInUse(c, j.tenant_id) >= q.max_concurrent_jobs) {
    park(c, lease, c.clock.now() + PARK_MS);
    return "parked";
  }
  c.sql.run("UPDATE jobs SET slot = 1, reserved_tokens = ? WHERE id = ?", tokens.reserve, jobId);
  return "ok";
}

export function storeRunOutcome(c: Ctx, lease: Lease, taskId: string, o: RunOutcome): void {
  assertLease(c, lease);
  const now = c.clock.now();
  const output = o.status === "succeeded" ? json(o.output) : null;
  const error = o.status === "succeeded" ? null : json(o.error);
  // The primary key (task_id, step_id) and the status guard keep a stored outcome final.
  const changed = c.sql.run(
    `INSERT INTO steps (task_id, step_id, position, kind, status, output, error, attempts, created_at, updated_at)
     VALUES (?, ?, ?, 'run', ?, ?, ?, ?, ?, ?)
     ON CONFLICT (task_id, step_id) DO UPDATE SET status = excluded.status, output = excluded.output,
       error = excluded.error, attempts = excluded.attempts, updated_at = excluded.updated_at
     WHERE steps.status = 'running'`,
    taskId,
    o.stepId,
    o.position,
    o.status,
    output,
    error,
    o.attempts,
    now,
    now,
  ).changes;
  const task = taskRow(c, taskId)!;
  if (changed > 0 && o.status !== "running") {
    emit(c, task.tenantId, taskId, `step.${o.status}`, { step_id: o.stepId, kind: "run" });
  }
}

export function finishAdvance(c: Ctx, lease: Lease, taskId: string, r: AdvanceResult): void {
  assertLease(c, lease);
  const task = taskRow(c, taskId);
  complete(c, lease);
  if (!task || isTerminalTask(task.status)) return;
  switch (r.kind) {
    case "succeeded":
      setTaskStatus(c, task, "succeeded", { output: r.output });
      return;
    case "failed":
      setTaskStatus(c, task, "failed", { error: r.error });
      return;
    case "retry":
      enqueue(c, [advanceItem(task.tenantId, taskId, r.runAt)]);
      return;
    case "timed_out":
      setTaskStatus(c, task, "timed_out", { error: r.error });
      return;
    case "suspended":
      setTaskStatus(c, task, "waiting");
      return;
  }
}

function job(c: Ctx, jobId: string) {
  const r = c.sql.get<JobDbRow>("SELECT * FROM jobs WHERE id = ?", jobId);
  return r ? toJob(r) : null;
}

export function recordJobCreated(
  c: Ctx,
  lease: Lease,
  jobId: string,
  externalId: string,
  status: JobStatus,
): void {
  assertLease(c, lease);
  complete(c, lease);
  const j = job(c, jobId);
  if (!j || j.externalId !== null) return;
  const now = c.clock.now();
  c.sql.run(
    "UPDATE jobs SET external_id = ?, status = CASE WHEN status = 'pending' THEN ? ELSE status END, updated_at = ? WHERE id = ?",
    externalId,
    status,
    now,
    jobId,
  );
  emit(c, j.tenantId, j.taskId, "job.created", {
    step_id: j.stepId,
    job_id: jobId,
    provider: j.provider,
    external_id: externalId,
  });
  countUsage(c, j.tenantId, { jobs_created: 1 });
  const pollAfter = c.sql.get<{ p: number | null }>(
    "SELECT poll_after_ms AS p FROM jobs WHERE id = ?",
    jobId,
  )?.p;
  if (pollAfter != null) enqueue(c, [pollItem(j.tenantId, jobId, now + pollAfter, 1)]);
  // ARCHITECTURE §3.5: events that came before the job was known are applied now.
  const early = c.sql.all<{ id: string }>(
    "SELECT id FROM inbox_events WHERE provider = ? AND job_external_id = ? AND status = 'unmatched' ORDER BY received_at",
    j.provider,
    externalId,
  );
  for (const e of early) {
    c.sql.run("UPDATE inbox_events SET status = 'received', updated_at = ? WHERE id = ?", now, e.id);
    enqueue(c, [applyItem(j.tenantId, e.id)]);
  }
}

/** Ends a job's step with `stepStatus`, stores the job's final fields, and advances its task. */
function endJobStep(
  c: Ctx,
  j: ReturnType<typeof toJob>,
  jobStatus: JobStatus,
  stepStatus: "succeeded" | "failed" | "timed_out",
  fields: { output?: unknown; error?: ErrorInfo | null; usage?: unknown },
): void {
  const now = c.clock.now();
  c.sql.run(
    `UPDATE jobs SET status = ?, output = COALESCE(?, output), error = COALESCE(?, error), usage = COALESCE(?, usage),
       reserved_tokens = 0, updated_at = ? WHERE id = ?`,
    jobStatus,
    fields.output === undefined ? null : json(fields.output),
    fields.error ? json(fields.error) : null,
    fields.usage === undefined ? null : json(fields.usage),
    now,
    j.id,
  );
  // The job has ended: its reconciler poll has nothing left to ask, and its slot is free.
  c.sql.run("DELETE FROM work_items WHERE dedupe_key = ? AND status = 'pending'", `poll:${j.id}`);
  countUsage(c, j.tenantId, jobEndCounts(jobStatus, fields.usage));
  wakeParked(c, j.tenantId);
  const task = taskRow(c, j.taskId);
  if (!task) return;
  endWait(c, task, j.stepId, stepStatus, {
    ...(stepStatus === "succeeded" ? { output: fields.output } : {}),
    ...(fields.error ? { error: fields.error } : {}),
  });
}

export function failJob(c: Ctx, lease: Lease, jobId: string, error: ErrorInfo): void {
  assertLease(c, lease);
  complete(c, lease);
  const j = job(c, jobId);
  if (!j || isTerminalJob(j.status)) return;
  endJobStep(c, j, "failed", "failed", { error });
}

export async function recordPoll(
  c: Ctx,
  lease: Lease,
  jobId: string,
  event: NewInboxEvent | null,
  next: { runAt: number; attempt: number } | null,
): Promise<void> {
  assertLease(c, lease);
  complete(c, lease);
  if (event) await recordEvent(sqliteTx(c), event);
  const j = job(c, jobId);
  if (next && j && !isTerminalJob(j.status))
    enqueue(c, [pollItem(j.tenantId, jobId, next.runAt, next.attempt)]);
}

/** The synchronous form of the shared `markInbox` (ops/inbox-ops.ts): the same SQL text. */
function markInbox(c: Ctx, id: string, status: InboxStatus, fields: Parameters<typeof markParams>[3]): void {
  c.sql.run(inboxSql.mark, ...markParams(c.clock.now(), id, status, fields));
}

export function applyJobEvent(
  c: Ctx,
  lease: Lease,
  inboxId: string,
  provider: string,
  ev: ProviderEvent,
): ApplyOutcome {
  assertLease(c, lease);
  complete(c, lease);
  const inbox = c.sql.get<{ status: InboxStatus }>("SELECT status FROM inbox_events WHERE id = ?", inboxId);
  // Applied once (ARCHITECTURE §3.2): a replayed item for an event already applied or ignored does nothing.
  if (!inbox || (inbox.status !== "received" && inbox.status !== "unmatched")) return "ignored";
  const r = c.sql.get<JobDbRow>(
    "SELECT * FROM jobs WHERE provider = ? AND external_id = ?",
    provider,
    ev.jobId,
  );
  if (!r) {
    // ARCHITECTURE §3.5: kept until the job is recorded, then re-queued by recordJobCreated.
    markInbox(c, inboxId, "unmatched", {
      type: ev.type,
      jobExternalId: ev.jobId,
      note: "no job with this id yet",
    });
    return "unmatched";
  }
  const j = toJob(r);
  const effect = jobEventEffect(j.status, provider, ev, c.clock.now());
  const seen = { type: ev.type, jobExternalId: ev.jobId };
  switch (effect.kind) {
    case "late":
      c.sql.run(
        "UPDATE steps SET late_output = ? WHERE task_id = ? AND step_id = ?",
        json(effect.lateOutput),
        j.taskId,
        j.stepId,
      );
      markInbox(c, inboxId, "ignored", { ...seen, note: effect.note });
      return "ignored";
    case "ignored":
      markInbox(c, inboxId, "ignored", { ...seen, note: effect.note });
      return "ignored";
    case "end":
      markInbox(c, inboxId, "applied", seen);
      endJobStep(c, j, effect.jobStatus, effect.stepStatus, effect.fields);
      return "applied";
    case "move":
      markInbox(c, inboxId, "applied", seen);
      c.sql.run("UPDATE jobs SET status = ?, updated_at = ? WHERE id = ?", effect.to, c.clock.now(), j.id);
      emit(c, j.tenantId, j.taskId, `job.${effect.to}`, { step_id: j.stepId, job_id: j.id });
      return "applied";
  }
}
