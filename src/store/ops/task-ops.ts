import type { ErrorInfo } from "../../core/errors.ts";
import { LonghaulError } from "../../core/errors.ts";
import { eventField, sameStored } from "../../core/payload.ts";
import { checkSubmitQuotas } from "../../core/quota.ts";
import { startAt } from "../../core/start-at.ts";
import { cancelCascade, cancelPlan, canMoveTask, type TaskStatus } from "../../core/task.ts";
import { advanceItem, cancelJobItem } from "../../core/work-item.ts";
import { json } from "../json.ts";
import {
  type ArtifactDbRow,
  type JobDbRow,
  type StepDbRow,
  type TaskDbRow,
  toArtifact,
  toJob,
  toStep,
  toTask,
} from "../rows.ts";
import { pageById } from "../sql/page.ts";
import { inStates } from "../sql/states.ts";
import type { Dialect, Tx } from "../sql/tx.ts";
import type { NewTask, TaskDetail, TaskQuery, TaskRow } from "../store.ts";
import { wakeAwaitingRoom } from "./admission-ops.ts";
import { countUsage, tasksSubmittedToday, tenant, wakeParked } from "./tenant-ops.ts";

/*
 * Tasks: submit, read, list, cancel, written once for both dialects, and the task lock and
 * status change every operation on a task shares. Every operation that changes a task's
 * status, steps or jobs first takes the task's row lock (`lockTask`), so two of them on one
 * task run one after the other on PostgreSQL as they do under SQLite's single writer, and
 * cannot deadlock on each other's step or job rows.
 */

/** The statements a task's status change is read and written with. */
const taskSql = {
  byId: "SELECT * FROM tasks WHERE id = ?",
  lock: (d: Dialect) => `SELECT * FROM tasks WHERE id = ?${d.forUpdate}`,
  setStatus:
    "UPDATE tasks SET status = ?, output = COALESCE(?, output), error = COALESCE(?, error), updated_at = ? WHERE id = ?",
};

/** setStatus's parameters. */
const statusParams = (
  now: number,
  taskId: string,
  status: TaskStatus,
  fields: { output?: unknown; error?: ErrorInfo | null },
) => [
  status,
  fields.output === undefined ? null : json(fields.output),
  fields.error == null ? null : json(fields.error),
  now,
  taskId,
];

/** The data of the `task.<status>` event a status change emits. */
function statusEvent(status: TaskStatus, fields: { output?: unknown; error?: ErrorInfo | null }) {
  const data: Record<string, unknown> = { status };
  // A value in the blob store is named, not carried: events stay small (ARCHITECTURE §4.10).
  if (fields.output !== undefined) Object.assign(data, eventField("output", fields.output));
  if (fields.error) data.error = fields.error;
  return data;
}

/** Reads a task. No locks. */
export async function taskRow(tx: Tx, taskId: string): Promise<TaskRow | null> {
  const r = await tx.get<TaskDbRow>(taskSql.byId, [taskId]);
  return r ? toTask(r) : null;
}

/**
 * Reads a task and locks its row until the end of the transaction (`FOR UPDATE` on
 * PostgreSQL; the single writer under SQLite). No events, nothing enqueued.
 */
export async function lockTask(tx: Tx, taskId: string): Promise<TaskRow | null> {
  const r = await tx.get<TaskDbRow>(taskSql.lock(tx.d), [taskId]);
  return r ? toTask(r) : null;
}

/**
 * Moves a task to `status`. Takes no lock itself: the caller holds the task's (`lockTask`).
 * Emits `task.<status>` when the status changes. Enqueues nothing.
 */
export async function setTaskStatus(
  tx: Tx,
  task: TaskRow,
  status: TaskStatus,
  fields: { output?: unknown; error?: ErrorInfo | null } = {},
): Promise<void> {
  // The core's table decides which moves exist (ARCHITECTURE §3.3); one it refuses is a defect.
  if (task.status !== status && !canMoveTask(task.status, status)) {
    throw new Error(`Task ${task.id} cannot move from ${task.status} to ${status}.`);
  }
  await tx.run(taskSql.setStatus, statusParams(tx.clock.now(), task.id, status, fields));
  if (task.status !== status) tx.emit(task.tenantId, task.id, `task.${status}`, statusEvent(status, fields));
}

/**
 * Inserts the task, or finds the one already submitted with its client_request_id. Two
 * submits racing on one id meet at the unique index `tasks_client_request`: on PostgreSQL the
 * second INSERT waits for the first to commit, does nothing, and then reads the winner.
 * Locks: the tenant's usage row of today (by the counting upsert), to commit. Emits
 * `task.created`; enqueues the task's first advance.
 */
export async function submitTask(tx: Tx, t: NewTask): Promise<{ task: TaskRow; created: boolean }> {
  const input = json(t.input);
  if (t.clientRequestId !== null) {
    const existing = await existingSubmit(tx, t, input);
    if (existing) return existing;
  }
  const now = tx.clock.now();
  // Read against the store's clock, so every node agrees on what "in ten minutes" means.
  const runAt = startAt(now, t.start);
  const t0 = await tenant(tx, t.tenantId);
  if (t0) checkSubmitQuotas(t0, await tasksSubmittedToday(tx, t.tenantId), now);
  const row = await tx.get<TaskDbRow>(
    `INSERT INTO tasks (id, tenant_id, type, status, input, client_request_id, user_id, trace_id, rerun_of, created_at, updated_at)
     VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (tenant_id, client_request_id) WHERE client_request_id IS NOT NULL DO NOTHING
     RETURNING *`,
    [
      tx.ids.next("t"),
      t.tenantId,
      t.type,
      input,
      t.clientRequestId,
      t.userId,
      t.traceId,
      t.rerunOf ?? null,
      now,
      now,
    ],
  );
  // Lost the race to a concurrent submit: its row is committed now, and it is the answer.
  if (!row) return (await existingSubmit(tx, t, input))!;
  // Counted after the insert, so a duplicate submit counts nothing; the counter row stays
  // locked to commit, so submits racing for the day's last task cannot both pass.
  const counted = await countUsage(tx, t.tenantId, { tasks_submitted: 1 });
  if (t0) checkSubmitQuotas(t0, counted.tasks_submitted - 1, now);
  tx.emit(
    t.tenantId,
    row.id,
    "task.created",
    t.rerunOf ? { type: t.type, rerun_of: t.rerunOf } : { type: t.type },
  );
  await tx.enqueue([advanceItem(t.tenantId, row.id, runAt)]);
  return { task: toTask(row), created: true };
}

/**
 * Submits a batch in the caller's one transaction: each task as `submitTask` does (quotas,
 * idempotency, its event and first advance), in order, so the first that fails (a quota run
 * out part way) leaves none of them written. The answers come in the order given. Locks:
 * those of a submit, held to the end of the batch.
 */
export async function submitTasks(
  tx: Tx,
  ts: readonly NewTask[],
): Promise<{ task: TaskRow; created: boolean }[]> {
  const out: { task: TaskRow; created: boolean }[] = [];
  for (const t of ts) out.push(await submitTask(tx, t));
  return out;
}

/** The task already submitted with `t`'s client_request_id; IDEMPOTENCY_CONFLICT if it differs. */
async function existingSubmit(tx: Tx, t: NewTask, input: string) {
  const existing = await tx.get<TaskDbRow>(
    "SELECT * FROM tasks WHERE tenant_id = ? AND client_request_id = ?",
    [t.tenantId, t.clientRequestId],
  );
  if (!existing) return null;
  // Compared by SHA-256 when either is kept in the blob store (ARCHITECTURE §4.10). A re-run's
  // id names a re-run of that one task: a submit, or a re-run of another task, is a conflict.
  if (
    existing.type !== t.type ||
    !sameStored(existing.input, input) ||
    (existing.rerun_of ?? null) !== (t.rerunOf ?? null)
  ) {
    throw new LonghaulError(
      "IDEMPOTENCY_CONFLICT",
      `client_request_id "${t.clientRequestId}" was already used for task ${existing.id} with a different type, input or re-run. Use a new client_request_id for a new task.`,
    );
  }
  return { task: toTask(existing), created: false };
}

/** A task with its steps, jobs and artifacts. No locks: PostgreSQL reads it in one snapshot. */
export async function getTask(tx: Tx, tenantId: string, taskId: string): Promise<TaskDetail | null> {
  const r = await tx.get<TaskDbRow>("SELECT * FROM tasks WHERE id = ? AND tenant_id = ?", [taskId, tenantId]);
  if (!r) return null;
  const steps = await tx.all<StepDbRow>("SELECT * FROM steps WHERE task_id = ? ORDER BY position", [taskId]);
  const jobs = await tx.all<JobDbRow>("SELECT * FROM jobs WHERE task_id = ? ORDER BY created_at, id", [
    taskId,
  ]);
  const artifacts = await tx.all<ArtifactDbRow>(
    "SELECT * FROM artifacts WHERE task_id = ? ORDER BY created_at, name",
    [taskId],
  );
  const reruns = await tx.all<{ id: string }>(
    "SELECT id FROM tasks WHERE rerun_of = ? AND tenant_id = ? ORDER BY created_at, id",
    [taskId, tenantId],
  );
  return {
    task: toTask(r),
    steps: steps.map(toStep),
    jobs: jobs.map(toJob),
    artifacts: artifacts.map(toArtifact),
    reruns: reruns.map((x) => x.id),
  };
}

/**
 * A page of the tenant's tasks, newest first, created in `[createdFrom, createdBefore)` when
 * given (index `tasks_by_tenant_created`, migration 016). No locks.
 */
export async function listTasks(
  tx: Tx,
  tenantId: string,
  q: TaskQuery,
): Promise<{ tasks: TaskRow[]; nextCursor: string | null }> {
  const page = await pageById<TaskDbRow>(
    tx,
    "tasks",
    { tenant_id: tenantId, status: q.status, type: q.type, user_id: q.userId, trace_id: q.traceId },
    q,
    { created_at: { from: q.createdFrom, before: q.createdBefore } },
  );
  return { tasks: page.rows.map(toTask), nextCursor: page.nextCursor };
}

/** The statements of a cancel's cascade (core's `cancelCascade`), rendered once. */
const cancelSql = {
  steps: `UPDATE steps SET status = '${cancelCascade.steps.to}', updated_at = ?
    WHERE task_id = ? AND ${inStates("status", cancelCascade.steps.from)}`,
  jobs: `UPDATE jobs SET status = '${cancelCascade.jobs.to}', updated_at = ?
    WHERE task_id = ? AND ${inStates("status", cancelCascade.jobs.from)}`,
  stop: `SELECT id FROM jobs WHERE task_id = ? AND ${inStates("status", cancelCascade.stop)} ORDER BY id`,
};

/**
 * Cancels a task that has not ended, as core's `cancelPlan` decides: its running and waiting
 * steps and its pending jobs are canceled, its live jobs asked to stop. Each part of the
 * cascade is one statement, guarded by the states it moves, under the task's lock. Locks:
 * the task (`lockTask`). Emits `task.canceled`. Enqueues a `cancel_job` per live job, and
 * wakes the tenant's parked work (a slot is freed).
 */
export async function cancelTask(tx: Tx, tenantId: string, taskId: string): Promise<TaskRow> {
  const t = await lockTask(tx, taskId);
  if (!t || t.tenantId !== tenantId)
    throw new LonghaulError("TASK_NOT_FOUND", `No task ${taskId} for this tenant.`);
  const plan = cancelPlan(t);
  if (plan.kind === "unchanged") return t;
  const now = tx.clock.now();
  await tx.run(cancelSql.steps, [now, taskId]);
  // A job not yet created at its provider is never created now; a live one is asked to stop.
  await tx.run(cancelSql.jobs, [now, taskId]);
  const live = await tx.all<{ id: string }>(cancelSql.stop, [taskId]);
  await tx.enqueue(live.map((j) => cancelJobItem(tenantId, j.id)));
  await setTaskStatus(tx, t, plan.to);
  await wakeParked(tx, tenantId);
  await wakeAwaitingRoom(tx);
  return (await taskRow(tx, taskId))!;
}
