import type { ErrorInfo } from "../../core/errors.ts";
import { isTerminalJob, type JobStatus } from "../../core/job-state.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import { overBudget } from "../../core/quotas.ts";
import type { RunOutcome } from "../../core/replay.ts";
import { isTerminalTask } from "../../core/task-state.ts";
import { admitTokens } from "../budget.ts";
import { jobEndCounts, jobEventEffect } from "../job-rules.ts";
import { json } from "../json.ts";
import { markInbox, recordEvent } from "../ops/inbox-ops.ts";
import { lockTask, setTaskStatus } from "../ops/task-ops.ts";
import { countUsage, lockSlots, slotsInUse, tenant, wakeParked } from "../ops/tenant-ops.ts";
import { endWait } from "../ops/wait-ops.ts";
import { type InboxDbRow, type JobDbRow, toInbox } from "../rows.ts";
import type {
  AdvanceResult,
  ApplyOutcome,
  InboxEventRow,
  InboxStatus,
  Lease,
  NewInboxEvent,
  TaskRow,
} from "../store.ts";
import { advanceItem, applyItem, PARK_MS, pollItem } from "../work-items.ts";
import { advisoryLock, type Ctx } from "./db.ts";
import { emit } from "./event-log.ts";
import { assertLease, enqueue, park, removeItem } from "./queue-ops.ts";
import { txOf } from "./tx.ts";

export async function beginAdvance(
  c: Ctx,
  lease: Lease,
  taskId: string,
): Promise<"started" | "ended" | "parked"> {
  await assertLease(c, lease);
  const task = await lockTask(txOf(c), taskId);
  if (!task || isTerminalTask(task.status)) {
    await removeItem(c, lease);
    return "ended";
  }
  // ARCHITECTURE §4.6: a new task of a tenant at its job limit (or over a parking budget) waits as pending.
  if (task.status === "pending" && !(await hasRoom(c, task.tenantId))) {
    await park(c, lease, c.clock.now() + PARK_MS);
    return "parked";
  }
  if (task.status !== "running") await setTaskStatus(txOf(c), task, "running");
  return "started";
}

async function hasRoom(c: Ctx, tenantId: string): Promise<boolean> {
  const t = await tenant(txOf(c), tenantId);
  if (!t) return true;
  const q = t.quotas;
  if (q.budget_policy !== "reject" && overBudget(q, t.tokensThisPeriod)) return false;
  return q.max_concurrent_jobs == null || (await slotsInUse(txOf(c), tenantId)) < q.max_concurrent_jobs;
}

/**
 * Admits a job under its tenant's quotas before it is created at the provider. `ok`: go on
 * (the job now holds a slot). `parked`: the dispatch item waits, woken when a slot frees.
 * `rejected`: the tenant's token budget of this period is spent, with the `reject` policy.
 * Under a token budget the job reserves its declared max tokens (see `admitTokens`).
 * Admissions of one tenant take a lock, so two of them never both take its last free slot
 * or both fit in the budget's last tokens.
 */
export async function acquireJobSlot(
  c: Ctx,
  lease: Lease,
  jobId: string,
): Promise<"ok" | "parked" | "rejected"> {
  await assertLease(c, lease);
  const known = await c.sql.get<{ tenant_id: string; slot: boolean; max_tokens: number | null }>(
    "SELECT tenant_id, slot, max_tokens FROM jobs WHERE id = $1",
    [jobId],
  );
  if (!known || known.slot) return "ok";
  let t = await tenant(txOf(c), known.tenant_id);
  const q = t?.quotas ?? {};
  if (q.max_concurrent_jobs != null || q.token_budget != null) {
    await lockSlots(txOf(c), known.tenant_id);
    // Read again under the lock: another admission may just have taken a slot or reserved tokens.
    t = await tenant(txOf(c), known.tenant_id);
  }
  const tokens = t ? admitTokens(t, known.max_tokens) : { verdict: "ok" as const, reserve: 0 };
  if (tokens.verdict !== "ok") {
    if (tokens.verdict === "parked") await park(c, lease, c.clock.now() + PARK_MS);
    return tokens.verdict;
  }
  if (
    q.max_concurrent_jobs != null &&
    (await slotsInUse(txOf(c), known.tenant_id)) >= q.max_concurrent_jobs
  ) {
    await park(c, lease, c.clock.now() + PARK_MS);
    return "parked";
  }
  await c.sql.run("UPDATE jobs SET slot = TRUE, reserved_tokens = $2 WHERE id = $1", [jobId, tokens.reserve]);
  return "ok";
}

export async function storeRunOutcome(c: Ctx, lease: Lease, taskId: string, o: RunOutcome): Promise<void> {
  await assertLease(c, lease);
  const task = (await lockTask(txOf(c), taskId))!;
  const now = c.clock.now();
  // The primary key (task_id, step_id) and the status guard keep a stored outcome final.
  const changed = await c.sql.run(
    `INSERT INTO steps (task_id, step_id, position, kind, status, output, error, attempts, created_at, updated_at)
     VALUES ($1, $2, $3, 'run', $4, $5, $6, $7, $8, $8)
     ON CONFLICT (task_id, step_id) DO UPDATE SET status = excluded.status, output = excluded.output,
       error = excluded.error, attempts = excluded.attempts, updated_at = excluded.updated_at
     WHERE steps.status = 'running'`,
    [
      taskId,
      o.stepId,
      o.position,
      o.status,
      o.status === "succeeded" ? json(o.output) : null,
      o.status === "succeeded" ? null : json(o.error),
      o.attempts,
      now,
    ],
  );
  if (changed > 0 && o.status !== "running") {
    emit(c, task.tenantId, taskId, `step.${o.status}`, { step_id: o.stepId, kind: "run" });
  }
}

export async function finishAdvance(c: Ctx, lease: Lease, taskId: string, r: AdvanceResult): Promise<void> {
  await assertLease(c, lease);
  const task = await lockTask(txOf(c), taskId);
  await removeItem(c, lease);
  if (!task || isTerminalTask(task.status)) return;
  switch (r.kind) {
    case "succeeded":
      return setTaskStatus(txOf(c), task, "succeeded", { output: r.output });
    case "failed":
      return setTaskStatus(txOf(c), task, "failed", { error: r.error });
    case "retry":
      return enqueue(c, [advanceItem(task.tenantId, taskId, r.runAt)]);
    case "timed_out":
      return setTaskStatus(txOf(c), task, "timed_out", { error: r.error });
    case "suspended":
      return setTaskStatus(txOf(c), task, "waiting");
  }
}

async function jobRow(c: Ctx, jobId: string, lock = false): Promise<JobDbRow | undefined> {
  return c.sql.get<JobDbRow>(
    lock ? "SELECT * FROM jobs WHERE id = $1 FOR UPDATE" : "SELECT * FROM jobs WHERE id = $1",
    [jobId],
  );
}

/**
 * The lock that pairs an early event with its job's creation (ARCHITECTURE §3.5). Both
 * `applyJobEvent` (which may find no job and park the event as unmatched) and
 * `recordJobCreated` (which looks for parked events) take it before they read, so one of
 * them always runs after the other has committed and sees what it wrote: the event cannot be
 * parked after the creation already looked for it.
 */
const jobKeyLock = (c: Ctx, provider: string, externalId: string) =>
  advisoryLock(c, `job:${provider}:${externalId}`);

export async function recordJobCreated(
  c: Ctx,
  lease: Lease,
  jobId: string,
  externalId: string,
  status: JobStatus,
): Promise<void> {
  await assertLease(c, lease);
  await removeItem(c, lease);
  const known = await jobRow(c, jobId);
  if (!known || known.external_id !== null) return;
  await jobKeyLock(c, known.provider, externalId);
  const j = (await jobRow(c, jobId, true))!;
  if (j.external_id !== null) return;
  const now = c.clock.now();
  await c.sql.run(
    "UPDATE jobs SET external_id = $1, status = CASE WHEN status = 'pending' THEN $2 ELSE status END, updated_at = $3 WHERE id = $4",
    [externalId, status, now, jobId],
  );
  emit(c, j.tenant_id, j.task_id, "job.created", {
    step_id: j.step_id,
    job_id: jobId,
    provider: j.provider,
    external_id: externalId,
  });
  await countUsage(txOf(c), j.tenant_id, { jobs_created: 1 });
  const items = [];
  if (j.poll_after_ms != null) items.push(pollItem(j.tenant_id, jobId, now + j.poll_after_ms, 1));
  // ARCHITECTURE §3.5: events that came before the job was known are applied now.
  const early = await c.sql.all<{ id: string }>(
    `WITH woken AS (
       UPDATE inbox_events SET status = 'received', updated_at = $3
        WHERE provider = $1 AND job_external_id = $2 AND status = 'unmatched'
       RETURNING id, received_at
     )
     SELECT id FROM woken ORDER BY received_at, id`,
    [j.provider, externalId, now],
  );
  for (const e of early) items.push(applyItem(j.tenant_id, e.id));
  await enqueue(c, items);
}

/**
 * Ends a job's step with `stepStatus`, stores the job's final fields, and advances its task.
 * The caller holds the task's lock.
 */
async function endJobStep(
  c: Ctx,
  task: TaskRow,
  j: JobDbRow,
  jobStatus: JobStatus,
  stepStatus: "succeeded" | "failed" | "timed_out",
  fields: { output?: unknown; error?: ErrorInfo | null; usage?: unknown },
): Promise<void> {
  await c.sql.run(
    `UPDATE jobs SET status = $1, output = COALESCE($2, output), error = COALESCE($3, error),
       usage = COALESCE($4, usage), reserved_tokens = 0, updated_at = $5 WHERE id = $6`,
    [
      jobStatus,
      fields.output === undefined ? null : json(fields.output),
      fields.error ? json(fields.error) : null,
      fields.usage === undefined ? null : json(fields.usage),
      c.clock.now(),
      j.id,
    ],
  );
  // The job has ended: its reconciler poll has nothing left to ask, and its slot is free.
  await c.sql.run("DELETE FROM work_items WHERE dedupe_key = $1 AND status = 'pending'", [`poll:${j.id}`]);
  await countUsage(txOf(c), j.tenant_id, jobEndCounts(jobStatus, fields.usage));
  await wakeParked(txOf(c), j.tenant_id);
  await endWait(txOf(c), task, j.step_id, stepStatus, {
    ...(stepStatus === "succeeded" ? { output: fields.output } : {}),
    ...(fields.error ? { error: fields.error } : {}),
  });
}

/** Locks the task of a job, then reads the job afresh (see `lockTask` for the order). */
async function lockJobAndTask(c: Ctx, taskId: string, jobId: string) {
  // A job's task always exists: jobs.task_id references tasks, and tasks are never deleted.
  const task = (await lockTask(txOf(c), taskId))!;
  const job = (await jobRow(c, jobId, true))!;
  return { task, job };
}

export async function failJob(c: Ctx, lease: Lease, jobId: string, error: ErrorInfo): Promise<void> {
  await assertLease(c, lease);
  await removeItem(c, lease);
  const known = await jobRow(c, jobId);
  if (!known) return;
  const { task, job } = await lockJobAndTask(c, known.task_id, jobId);
  if (isTerminalJob(job.status)) return;
  await endJobStep(c, task, job, "failed", "failed", { error });
}

export async function recordPoll(
  c: Ctx,
  lease: Lease,
  jobId: string,
  event: NewInboxEvent | null,
  next: { runAt: number; attempt: number } | null,
): Promise<void> {
  await assertLease(c, lease);
  await removeItem(c, lease);
  if (event) await recordEvent(txOf(c), event);
  // FOR SHARE: a job that ends meanwhile deletes its pending poll after this commits, or is
  // seen ended here; either way no poll is left behind for an ended job.
  const j = await c.sql.get<{ tenant_id: string; status: JobStatus }>(
    "SELECT tenant_id, status FROM jobs WHERE id = $1 FOR SHARE",
    [jobId],
  );
  if (next && j && !isTerminalJob(j.status)) {
    await enqueue(c, [pollItem(j.tenant_id, jobId, next.runAt, next.attempt)]);
  }
}

/** Every inbox row of the given jobs of one provider, oldest first (a task's timeline). */
export async function inboxForJobs(
  c: Ctx,
  provider: string,
  externalIds: string[],
): Promise<InboxEventRow[]> {
  if (externalIds.length === 0) return [];
  const rows = await c.sql.all<InboxDbRow>(
    `SELECT * FROM inbox_events WHERE provider = $1 AND job_external_id = ANY($2::text[])
      ORDER BY received_at, id`,
    [provider, externalIds],
  );
  return rows.map(toInbox);
}

/**
 * Applies a provider event once. Lock order: the job key (pairs with recordJobCreated), the
 * inbox row (a replayed twin of this item waits, then sees the event applied), the task.
 */
export async function applyJobEvent(
  c: Ctx,
  lease: Lease,
  inboxId: string,
  provider: string,
  ev: ProviderEvent,
): Promise<ApplyOutcome> {
  await assertLease(c, lease);
  await removeItem(c, lease);
  await jobKeyLock(c, provider, ev.jobId);
  const inbox = await c.sql.get<{ status: InboxStatus }>(
    "SELECT status FROM inbox_events WHERE id = $1 FOR UPDATE",
    [inboxId],
  );
  // Applied once (ARCHITECTURE §3.2): a replayed item for an event already applied or ignored does nothing.
  if (!inbox || (inbox.status !== "received" && inbox.status !== "unmatched")) return "ignored";
  const found = await c.sql.get<{ id: string; task_id: string }>(
    "SELECT id, task_id FROM jobs WHERE provider = $1 AND external_id = $2",
    [provider, ev.jobId],
  );
  if (!found) {
    // ARCHITECTURE §3.5: kept until the job is recorded, then re-queued by recordJobCreated.
    await markInbox(txOf(c), inboxId, "unmatched", {
      type: ev.type,
      jobExternalId: ev.jobId,
      note: "no job with this id yet",
    });
    return "unmatched";
  }
  const { task, job: j } = await lockJobAndTask(c, found.task_id, found.id);
  const effect = jobEventEffect(j.status, provider, ev, c.clock.now());
  const seen = { type: ev.type, jobExternalId: ev.jobId };
  switch (effect.kind) {
    case "late":
      await c.sql.run("UPDATE steps SET late_output = $1 WHERE task_id = $2 AND step_id = $3", [
        json(effect.lateOutput),
        j.task_id,
        j.step_id,
      ]);
      await markInbox(txOf(c), inboxId, "ignored", { ...seen, note: effect.note });
      return "ignored";
    case "ignored":
      await markInbox(txOf(c), inboxId, "ignored", { ...seen, note: effect.note });
      return "ignored";
    case "end":
      await markInbox(txOf(c), inboxId, "applied", seen);
      await endJobStep(c, task, j, effect.jobStatus, effect.stepStatus, effect.fields);
      return "applied";
    case "move":
      await markInbox(txOf(c), inboxId, "applied", seen);
      await c.sql.run("UPDATE jobs SET status = $1, updated_at = $2 WHERE id = $3", [
        effect.to,
        c.clock.now(),
        j.id,
      ]);
      emit(c, j.tenant_id, j.task_id, `job.${effect.to}`, { step_id: j.step_id, job_id: j.id });
      return "applied";
  }
}
