import type { ErrorInfo } from "../../core/errors.ts";
import { LonghaulError } from "../../core/errors.ts";
import { isTerminalTask, type TaskStatus } from "../../core/task-state.ts";
import { json } from "../json.ts";
import { countUsage, tasksSubmittedToday, tenant, wakeParked } from "../ops/tenant-ops.ts";
import { type JobDbRow, type StepDbRow, type TaskDbRow, toJob, toStep, toTask } from "../rows.ts";
import type { NewTask, TaskDetail, TaskQuery, TaskRow } from "../store.ts";
import { checkSubmitQuotas } from "../submit-quotas.ts";
import { advanceItem, cancelJobItem } from "../work-items.ts";
import type { Ctx } from "./db.ts";
import { emit } from "./event-log.ts";
import { enqueue } from "./queue-ops.ts";
import { txOf } from "./tx.ts";

export async function taskRow(c: Ctx, taskId: string): Promise<TaskRow | null> {
  const r = await c.sql.get<TaskDbRow>("SELECT * FROM tasks WHERE id = $1", [taskId]);
  return r ? toTask(r) : null;
}

/**
 * Reads a task and locks its row until the end of the transaction. Every operation that
 * changes a task's status, steps or jobs takes this lock before it reads them, so two such
 * operations on one task run one after the other, as they do in SQLite; and since they all
 * take it first, they cannot deadlock on each other's step or job rows.
 */
export async function lockTask(c: Ctx, taskId: string): Promise<TaskRow | null> {
  const r = await c.sql.get<TaskDbRow>("SELECT * FROM tasks WHERE id = $1 FOR UPDATE", [taskId]);
  return r ? toTask(r) : null;
}

/** Moves a task to `status`, emitting `task.<status>` when it changes. */
export async function setTaskStatus(
  c: Ctx,
  task: TaskRow,
  status: TaskStatus,
  fields: { output?: unknown; error?: ErrorInfo | null } = {},
): Promise<void> {
  await c.sql.run(
    "UPDATE tasks SET status = $1, output = COALESCE($2, output), error = COALESCE($3, error), updated_at = $4 WHERE id = $5",
    [
      status,
      fields.output === undefined ? null : json(fields.output),
      fields.error == null ? null : json(fields.error),
      c.clock.now(),
      task.id,
    ],
  );
  if (task.status !== status) {
    const data: Record<string, unknown> = { status };
    if (fields.output !== undefined) data.output = fields.output;
    if (fields.error) data.error = fields.error;
    emit(c, task.tenantId, task.id, `task.${status}`, data);
  }
}

/**
 * Inserts the task, or finds the one already submitted with its client_request_id. Two
 * submits racing on one id meet at the unique index `tasks_client_request`: the second
 * INSERT waits for the first to commit, does nothing, and then reads the winner.
 */
export async function submitTask(c: Ctx, t: NewTask): Promise<{ task: TaskRow; created: boolean }> {
  const input = json(t.input);
  if (t.clientRequestId !== null) {
    const existing = await existingSubmit(c, t, input);
    if (existing) return existing;
  }
  const now = c.clock.now();
  const t0 = await tenant(txOf(c), t.tenantId);
  if (t0) checkSubmitQuotas(t0, await tasksSubmittedToday(txOf(c), t.tenantId), now);
  const row = await c.sql.get<TaskDbRow>(
    `INSERT INTO tasks (id, tenant_id, type, status, input, client_request_id, user_id, trace_id, created_at, updated_at)
     VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $8)
     ON CONFLICT (tenant_id, client_request_id) WHERE client_request_id IS NOT NULL DO NOTHING
     RETURNING *`,
    [c.ids.next("t"), t.tenantId, t.type, input, t.clientRequestId, t.userId, t.traceId, now],
  );
  // Lost the race to a concurrent submit: its row is committed now, and it is the answer.
  if (!row) return (await existingSubmit(c, t, input))!;
  // Counted after the insert, so a duplicate submit counts nothing; the counter row stays
  // locked to commit, so submits racing for the day's last task cannot both pass.
  const counted = await countUsage(txOf(c), t.tenantId, { tasks_submitted: 1 });
  if (t0) checkSubmitQuotas(t0, counted.tasks_submitted - 1, now);
  emit(c, t.tenantId, row.id, "task.created", { type: t.type });
  await enqueue(c, [advanceItem(t.tenantId, row.id)]);
  return { task: toTask(row), created: true };
}

/** The task already submitted with `t`'s client_request_id; IDEMPOTENCY_CONFLICT if it differs. */
async function existingSubmit(c: Ctx, t: NewTask, input: string) {
  const existing = await c.sql.get<TaskDbRow>(
    "SELECT * FROM tasks WHERE tenant_id = $1 AND client_request_id = $2",
    [t.tenantId, t.clientRequestId],
  );
  if (!existing) return null;
  if (existing.type !== t.type || existing.input !== input) {
    throw new LonghaulError(
      "IDEMPOTENCY_CONFLICT",
      `client_request_id "${t.clientRequestId}" was already used for task ${existing.id} with a different type or input. Use a new client_request_id for a new task.`,
    );
  }
  return { task: toTask(existing), created: false };
}

export async function getTask(c: Ctx, tenantId: string, taskId: string): Promise<TaskDetail | null> {
  const r = await c.sql.get<TaskDbRow>("SELECT * FROM tasks WHERE id = $1 AND tenant_id = $2", [
    taskId,
    tenantId,
  ]);
  if (!r) return null;
  const steps = await c.sql.all<StepDbRow>("SELECT * FROM steps WHERE task_id = $1 ORDER BY position", [
    taskId,
  ]);
  const jobs = await c.sql.all<JobDbRow>("SELECT * FROM jobs WHERE task_id = $1 ORDER BY created_at, id", [
    taskId,
  ]);
  return { task: toTask(r), steps: steps.map(toStep), jobs: jobs.map(toJob) };
}

export async function listTasks(
  c: Ctx,
  tenantId: string,
  q: TaskQuery,
): Promise<{ tasks: TaskRow[]; nextCursor: string | null }> {
  const params: unknown[] = [tenantId];
  const where = ["tenant_id = $1"];
  const add = (clause: string, value: unknown) => {
    params.push(value);
    where.push(clause.replace("?", `$${params.length}`));
  };
  if (q.status) add("status = ?", q.status);
  if (q.type) add("type = ?", q.type);
  if (q.userId) add("user_id = ?", q.userId);
  if (q.traceId) add("trace_id = ?", q.traceId);
  if (q.cursor) add("id < ?", q.cursor);
  params.push(q.limit + 1);
  const rows = await c.sql.all<TaskDbRow>(
    `SELECT * FROM tasks WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT $${params.length}`,
    params,
  );
  const more = rows.length > q.limit;
  const tasks = rows.slice(0, q.limit).map(toTask);
  return { tasks, nextCursor: more ? (tasks.at(-1)?.id ?? null) : null };
}

export async function cancelTask(c: Ctx, tenantId: string, taskId: string): Promise<TaskRow> {
  const t = await lockTask(c, taskId);
  if (!t || t.tenantId !== tenantId)
    throw new LonghaulError("TASK_NOT_FOUND", `No task ${taskId} for this tenant.`);
  if (t.status === "canceled") return t;
  if (isTerminalTask(t.status)) {
    throw new LonghaulError(
      "TASK_NOT_CANCELABLE",
      `Task ${taskId} has already ended (${t.status}); it cannot be canceled.`,
    );
  }
  const now = c.clock.now();
  await c.sql.run(
    "UPDATE steps SET status = 'canceled', updated_at = $1 WHERE task_id = $2 AND status IN ('running', 'waiting')",
    [now, taskId],
  );
  // A job not yet created at its provider is never created now; a live one is asked to stop.
  await c.sql.run(
    "UPDATE jobs SET status = 'canceled', updated_at = $1 WHERE task_id = $2 AND status = 'pending'",
    [now, taskId],
  );
  const live = await c.sql.all<{ id: string }>(
    "SELECT id FROM jobs WHERE task_id = $1 AND status IN ('created', 'running') ORDER BY id",
    [taskId],
  );
  await enqueue(
    c,
    live.map((j) => cancelJobItem(tenantId, j.id)),
  );
  await setTaskStatus(c, t, "canceled");
  await wakeParked(txOf(c), tenantId);
  return (await taskRow(c, taskId))!;
}
