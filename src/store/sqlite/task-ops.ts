import type { ErrorInfo } from "../../core/errors.ts";
import { LonghaulError } from "../../core/errors.ts";
import { isTerminalTask, type TaskStatus } from "../../core/task-state.ts";
import { json } from "../json.ts";
import {
  type JobDbRow,
  type StepDbRow,
  type TaskDbRow,
  type TaskEventDbRow,
  toJob,
  toStep,
  toTask,
  toTaskEvent,
} from "../rows.ts";
import type { NewTask, TaskDetail, TaskEventRow, TaskQuery, TaskRow } from "../store.ts";
import { checkSubmitQuotas } from "../submit-quotas.ts";
import { advanceItem, cancelJobItem } from "../work-items.ts";
import type { Ctx } from "./db.ts";
import { fanOut } from "./fan-out.ts";
import { enqueue } from "./queue-ops.ts";
import { countUsage, tasksSubmittedToday, tenant, wakeParked } from "./tenant-sync.ts";

/**
 * Appends to the tenant's task event log (in the caller's transaction), with the outbound
 * deliveries it owes, and notes it to be announced once the transaction commits.
 */
export function emit(c: Ctx, tenantId: string, taskId: string, type: string, data: unknown): void {
  const { lastInsertRowid } = c.sql.run(
    "INSERT INTO task_events (tenant_id, task_id, type, data, created_at) VALUES (?, ?, ?, ?, ?)",
    tenantId,
    taskId,
    type,
    json(data),
    c.clock.now(),
  );
  const seq = Number(lastInsertRowid);
  c.appended ??= [];
  c.appended.push([tenantId, seq]);
  fanOut(c, tenantId, taskId, seq, type);
}

export function taskRow(c: Ctx, taskId: string): TaskRow | null {
  const r = c.sql.get<TaskDbRow>("SELECT * FROM tasks WHERE id = ?", taskId);
  return r ? toTask(r) : null;
}

/** Moves a task to `status`, emitting `task.<status>` when it changes. */
export function setTaskStatus(
  c: Ctx,
  task: TaskRow,
  status: TaskStatus,
  fields: { output?: unknown; error?: ErrorInfo | null } = {},
): void {
  c.sql.run(
    "UPDATE tasks SET status = ?, output = COALESCE(?, output), error = COALESCE(?, error), updated_at = ? WHERE id = ?",
    status,
    fields.output === undefined ? null : json(fields.output),
    fields.error == null ? null : json(fields.error),
    c.clock.now(),
    task.id,
  );
  if (task.status !== status) {
    const data: Record<string, unknown> = { status };
    if (fields.output !== undefined) data.output = fields.output;
    if (fields.error) data.error = fields.error;
    emit(c, task.tenantId, task.id, `task.${status}`, data);
  }
}

export function submitTask(c: Ctx, t: NewTask): { task: TaskRow; created: boolean } {
  if (t.clientRequestId !== null) {
    const existing = c.sql.get<TaskDbRow>(
      "SELECT * FROM tasks WHERE tenant_id = ? AND client_request_id = ?",
      t.tenantId,
      t.clientRequestId,
    );
    if (existing) {
      if (existing.type !== t.type || existing.input !== json(t.input)) {
        throw new LonghaulError(
          "IDEMPOTENCY_CONFLICT",
          `client_request_id "${t.clientRequestId}" was already used for task ${existing.id} with a different type or input. Use a new client_request_id for a new task.`,
        );
      }
      return { task: toTask(existing), created: false };
    }
  }
  const now = c.clock.now();
  const t0 = tenant(c, t.tenantId);
  if (t0) checkSubmitQuotas(t0, tasksSubmittedToday(c, t.tenantId), now);
  countUsage(c, t.tenantId, { tasks_submitted: 1 });
  const id = c.ids.next("t");
  const row = c.sql.get<TaskDbRow>(
    `INSERT INTO tasks (id, tenant_id, type, status, input, client_request_id, user_id, trace_id, created_at, updated_at)
     VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?) RETURNING *`,
    id,
    t.tenantId,
    t.type,
    json(t.input),
    t.clientRequestId,
    t.userId,
    t.traceId,
    now,
    now,
  )!;
  emit(c, t.tenantId, id, "task.created", { type: t.type });
  enqueue(c, [advanceItem(t.tenantId, id)]);
  return { task: toTask(row), created: true };
}

export function getTask(c: Ctx, tenantId: string, taskId: string): TaskDetail | null {
  const r = c.sql.get<TaskDbRow>("SELECT * FROM tasks WHERE id = ? AND tenant_id = ?", taskId, tenantId);
  if (!r) return null;
  return {
    task: toTask(r),
    steps: c.sql
      .all<StepDbRow>("SELECT * FROM steps WHERE task_id = ? ORDER BY position", taskId)
      .map(toStep),
    jobs: c.sql
      .all<JobDbRow>("SELECT * FROM jobs WHERE task_id = ? ORDER BY created_at, id", taskId)
      .map(toJob),
  };
}

export function listTasks(
  c: Ctx,
  tenantId: string,
  q: TaskQuery,
): { tasks: TaskRow[]; nextCursor: string | null } {
  const where = ["tenant_id = ?"];
  const params: unknown[] = [tenantId];
  if (q.status) {
    where.push("status = ?");
    params.push(q.status);
  }
  if (q.type) {
    where.push("type = ?");
    params.push(q.type);
  }
  if (q.userId) {
    where.push("user_id = ?");
    params.push(q.userId);
  }
  if (q.traceId) {
    where.push("trace_id = ?");
    params.push(q.traceId);
  }
  if (q.cursor) {
    where.push("id < ?");
    params.push(q.cursor);
  }
  const rows = c.sql.all<TaskDbRow>(
    `SELECT * FROM tasks WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT ?`,
    ...params,
    q.limit + 1,
  );
  const more = rows.length > q.limit;
  const tasks = rows.slice(0, q.limit).map(toTask);
  return { tasks, nextCursor: more ? (tasks.at(-1)?.id ?? null) : null };
}

export function cancelTask(c: Ctx, tenantId: string, taskId: string): TaskRow {
  const task = c.sql.get<TaskDbRow>("SELECT * FROM tasks WHERE id = ? AND tenant_id = ?", taskId, tenantId);
  if (!task) throw new LonghaulError("TASK_NOT_FOUND", `No task ${taskId} for this tenant.`);
  const t = toTask(task);
  if (t.status === "canceled") return t;
  if (isTerminalTask(t.status)) {
    throw new LonghaulError(
      "TASK_NOT_CANCELABLE",
      `Task ${taskId} has already ended (${t.status}); it cannot be canceled.`,
    );
  }
  const now = c.clock.now();
  c.sql.run(
    "UPDATE steps SET status = 'canceled', updated_at = ? WHERE task_id = ? AND status IN ('running', 'waiting')",
    now,
    taskId,
  );
  // A job not yet created at its provider is never created now; a live one is asked to stop.
  c.sql.run(
    "UPDATE jobs SET status = 'canceled', updated_at = ? WHERE task_id = ? AND status = 'pending'",
    now,
    taskId,
  );
  const live = c.sql.all<{ id: string }>(
    "SELECT id FROM jobs WHERE task_id = ? AND status IN ('created', 'running')",
    taskId,
  );
  for (const j of live) enqueue(c, [cancelJobItem(tenantId, j.id)]);
  setTaskStatus(c, t, "canceled");
  wakeParked(c, tenantId);
  return taskRow(c, taskId)!;
}

export function taskEvents(
  c: Ctx,
  tenantId: string,
  afterSeq: number,
  limit: number,
  taskId?: string,
): TaskEventRow[] {
  const rows = taskId
    ? c.sql.all<TaskEventDbRow>(
        "SELECT * FROM task_events WHERE tenant_id = ? AND task_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        tenantId,
        taskId,
        afterSeq,
        limit,
      )
    : c.sql.all<TaskEventDbRow>(
        "SELECT * FROM task_events WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        tenantId,
        afterSeq,
        limit,
      );
  return rows.map(toTaskEvent);
}
