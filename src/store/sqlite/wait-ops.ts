import type { ErrorInfo } from "../../core/errors.ts";
import { isTerminalJob, type JobStatus } from "../../core/job-state.ts";
import type { StoredStep } from "../../core/replay.ts";
import { isTerminalTask } from "../../core/task-state.ts";
import { type EventMatch, signalMatches, type WaitRequest } from "../../core/wait.ts";
import { json, parseJson } from "../json.ts";
import {
  type ApprovalDecisionDbRow,
  type SignalDbRow,
  type StepDbRow,
  toApprovalDecision,
  toStep,
} from "../rows.ts";
import type {
  ApprovalDecisionInput,
  ApprovalDecisionRow,
  CallbackAnswer,
  CallbackDelivery,
  Lease,
  StepRow,
  TaskRow,
  WaitAnswer,
} from "../store.ts";
import {
  approvalOutput,
  bodySha256,
  callbackInboxRow,
  callbackVerdict,
  lateResult,
  refusal,
  reminderEvent,
  signalOutput,
  timeoutEnd,
  waitSetup,
} from "../wait-rules.ts";
import { advanceItem, cancelJobItem, dispatchItem, timerKeys } from "../work-items.ts";
import type { Ctx } from "./db.ts";
import { emit } from "./event-log.ts";
import { assertLease, complete, enqueue } from "./queue-ops.ts";
import { taskRow } from "./task-sync.ts";
import { wakeParked } from "./tenant-sync.ts";

function stepRow(c: Ctx, taskId: string, stepId: string): StepRow | null {
  const r = c.sql.get<StepDbRow>("SELECT * FROM steps WHERE task_id = ? AND step_id = ?", taskId, stepId);
  return r ? toStep(r) : null;
}

export function registerWait(c: Ctx, lease: Lease, taskId: string, w: WaitRequest): StoredStep {
  assertLease(c, lease);
  const task = taskRow(c, taskId)!;
  const now = c.clock.now();
  let jobId: string | null = null;
  if (w.kind === "job") {
    jobId = c.ids.next("j");
    c.sql.run(
      `INSERT INTO jobs (id, tenant_id, task_id, step_id, provider, status, input, idempotency_key, poll_after_ms,
         cancel_on_timeout, created_at, updated_at, max_tokens)
       VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)`,
      jobId,
      task.tenantId,
      taskId,
      w.stepId,
      w.provider,
      json(w.input),
      `${taskId}:${w.stepId}`,
      w.pollAfterMs,
      w.cancelOnTimeout ? 1 : 0,
      now,
      now,
      w.maxTokens ?? null,
    );
    enqueue(c, [dispatchItem(task.tenantId, jobId)]);
  }
  if (w.kind === "wait_event") {
    c.sql.run(
      "INSERT INTO event_waits (task_id, step_id, tenant_id, name, match) VALUES (?, ?, ?, ?, ?)",
      taskId,
      w.stepId,
      task.tenantId,
      w.match.event,
      json(w.match),
    );
  }
  const setup = waitSetup(w, task.tenantId, taskId, now, jobId);
  c.sql.run(
    `INSERT INTO steps (task_id, step_id, position, kind, status, attempts, deadline_at, job_id, config, created_at, updated_at)
     VALUES (?, ?, ?, ?, 'waiting', 1, ?, ?, ?, ?, ?)`,
    taskId,
    w.stepId,
    w.position,
    w.kind,
    setup.deadline,
    jobId,
    setup.config === null ? null : json(setup.config),
    now,
    now,
  );
  enqueue(c, setup.timers);
  emit(c, task.tenantId, taskId, "step.waiting", setup.event);
  if (w.kind === "wait_event") {
    // ARCHITECTURE §3.5: a signal that came after the task was created, but before this wait, counts.
    const earlier = c.sql.all<SignalDbRow>(
      "SELECT id, name, data FROM signals WHERE tenant_id = ? AND name = ? AND received_at >= ? ORDER BY received_at, id",
      task.tenantId,
      w.match.event,
      task.createdAt,
    );
    const hit = earlier.find((s) => signalMatches(w.match, s.name, parseJson(s.data)));
    if (hit) endWait(c, task, w.stepId, "succeeded", { output: signalOutput(hit) });
  }
  return stepRow(c, taskId, w.stepId)!;
}

export function markHandedOff(c: Ctx, lease: Lease, taskId: string, stepId: string): void {
  assertLease(c, lease);
  c.sql.run("UPDATE steps SET handed_off = 1 WHERE task_id = ? AND step_id = ?", taskId, stepId);
}

/**
 * Ends a waiting step (`changes === 0` when it was not waiting), clears its timers and
 * signal subscription, emits `step.<status>`, and queues the task's advance.
 */
export function endWait(
  c: Ctx,
  task: TaskRow,
  stepId: string,
  status: "succeeded" | "failed" | "timed_out",
  fields: { output?: unknown; error?: ErrorInfo },
): boolean {
  const now = c.clock.now();
  const changed = c.sql.run(
    `UPDATE steps SET status = ?, output = ?, error = ?, updated_at = ? WHERE task_id = ? AND step_id = ? AND status = 'waiting'`,
    status,
    status === "succeeded" ? json(fields.output) : null,
    fields.error ? json(fields.error) : null,
    now,
    task.id,
    stepId,
  ).changes;
  if (changed === 0) return false;
  c.sql.run("DELETE FROM event_waits WHERE task_id = ? AND step_id = ?", task.id, stepId);
  const keys = timerKeys(task.id, stepId);
  c.sql.run(
    `DELETE FROM work_items WHERE status = 'pending' AND dedupe_key IN (${keys.map(() => "?").join(", ")})`,
    ...keys,
  );
  const data: Record<string, unknown> = { step_id: stepId };
  if (fields.error) data.error = fields.error;
  emit(c, task.tenantId, task.id, `step.${status}`, data);
  if (!isTerminalTask(task.status)) enqueue(c, [advanceItem(task.tenantId, task.id)]);
  return true;
}

export function stepForToken(c: Ctx, tenantId: string, taskId: string, stepId: string) {
  const task = taskRow(c, taskId);
  if (!task || task.tenantId !== tenantId) return null;
  const step = stepRow(c, taskId, stepId);
  return step ? { task, step } : null;
}

export function completeCallback(c: Ctx, d: CallbackDelivery): CallbackAnswer {
  const now = c.clock.now();
  const sha256 = bodySha256(d.body);
  const found = stepForToken(c, d.tenantId, d.taskId, d.stepId);
  const stored = found
    ? c.sql.get<{ result_sha256: string | null }>(
        "SELECT result_sha256 FROM steps WHERE task_id = ? AND step_id = ?",
        d.taskId,
        d.stepId,
      )
    : undefined;
  const verdict = callbackVerdict(
    found?.task ?? null,
    found?.step ?? null,
    stored?.result_sha256 ?? null,
    d,
    sha256,
    now,
  );
  const row = callbackInboxRow(verdict, d, sha256);
  const inbox = () =>
    c.sql.run(
      `INSERT INTO inbox_events (id, source, provider, event_id, body, status, type, note, received_at, updated_at)
       VALUES (?, 'callback', 'callback', ?, ?, ?, 'callback', ?, ?, ?)`,
      c.ids.next("evt"),
      `${d.taskId}:${d.stepId}:${d.attempt}:${c.ids.next("cb")}`,
      row.body,
      row.status,
      row.note,
      now,
      now,
    );
  if (verdict) {
    if (verdict === "expired" && found) {
      // ARCHITECTURE §4.4: kept as a late result, visible but not applied; only the first, bounded.
      c.sql.run(
        "UPDATE steps SET late_output = ? WHERE task_id = ? AND step_id = ? AND late_output IS NULL",
        json(lateResult(d, sha256, now)),
        d.taskId,
        d.stepId,
      );
    }
    inbox();
    return verdict;
  }
  endWait(c, found!.task, d.stepId, "succeeded", { output: d.output });
  c.sql.run(
    "UPDATE steps SET result_sha256 = ? WHERE task_id = ? AND step_id = ?",
    sha256,
    d.taskId,
    d.stepId,
  );
  inbox();
  return "accepted";
}

export function approvalDecisions(c: Ctx, taskId: string, stepId: string): ApprovalDecisionRow[] {
  return c.sql
    .all<ApprovalDecisionDbRow>(
      "SELECT approver, decision, comment, decided_at FROM approval_decisions WHERE task_id = ? AND step_id = ? ORDER BY decided_at, approver",
      taskId,
      stepId,
    )
    .map(toApprovalDecision);
}

export function decideApproval(c: Ctx, d: ApprovalDecisionInput): WaitAnswer {
  const now = c.clock.now();
  const found = stepForToken(c, d.tenantId, d.taskId, d.stepId);
  const why = refusal(found?.task ?? null, found?.step ?? null, d.attempt, now);
  if (why) return why;
  const { task, step } = found!;
  const approver = d.approver ?? "anonymous";
  const inserted = c.sql.run(
    `INSERT INTO approval_decisions (task_id, step_id, approver, decision, comment, decided_at)
     VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    d.taskId,
    d.stepId,
    approver,
    d.decision,
    d.comment,
    now,
  ).changes;
  if (inserted === 0) return "duplicate_decision";
  emit(c, task.tenantId, task.id, "step.decided", {
    step_id: d.stepId,
    approver,
    decision: d.decision,
    comment: d.comment,
  });
  const output = approvalOutput(step, approvalDecisions(c, d.taskId, d.stepId));
  if (output) endWait(c, task, d.stepId, "succeeded", { output });
  return "accepted";
}

export function recordSignal(
  c: Ctx,
  s: { tenantId: string; name: string; data: unknown; clientId: string | null },
): { id: string; duplicate: boolean; matched: number } {
  if (s.clientId !== null) {
    const existing = c.sql.get<{ id: string }>(
      "SELECT id FROM signals WHERE tenant_id = ? AND client_id = ?",
      s.tenantId,
      s.clientId,
    );
    if (existing) return { id: existing.id, duplicate: true, matched: 0 };
  }
  const id = c.ids.next("sig");
  const row = { id, name: s.name, data: json(s.data) };
  c.sql.run(
    "INSERT INTO signals (id, tenant_id, name, data, client_id, received_at) VALUES (?, ?, ?, ?, ?, ?)",
    id,
    s.tenantId,
    s.name,
    row.data,
    s.clientId,
    c.clock.now(),
  );
  let matched = 0;
  const waits = c.sql.all<{ task_id: string; step_id: string; match: string }>(
    "SELECT task_id, step_id, match FROM event_waits WHERE tenant_id = ? AND name = ?",
    s.tenantId,
    s.name,
  );
  for (const w of waits) {
    if (!signalMatches(parseJson<EventMatch>(w.match), s.name, s.data)) continue;
    const task = taskRow(c, w.task_id);
    if (task && endWait(c, task, w.step_id, "succeeded", { output: signalOutput(row) })) matched++;
  }
  return { id, duplicate: false, matched };
}

export function fireReminder(
  c: Ctx,
  lease: Lease,
  taskId: string,
  stepId: string,
  type: "reminder" | "escalation",
): boolean {
  assertLease(c, lease);
  complete(c, lease);
  const task = taskRow(c, taskId);
  const step = stepRow(c, taskId, stepId);
  if (!task || !step || step.status !== "waiting" || isTerminalTask(task.status)) return false;
  const event = reminderEvent(step, type);
  emit(c, task.tenantId, taskId, event.type, event.data);
  return true;
}

/** At a wait's deadline: each kind's timeout policy (ARCHITECTURE §4.4). */
export function fireTimeout(c: Ctx, lease: Lease, taskId: string, stepId: string): boolean {
  assertLease(c, lease);
  complete(c, lease);
  const task = taskRow(c, taskId);
  const step = stepRow(c, taskId, stepId);
  if (!task || !step || step.status !== "waiting") return false;
  if (step.kind === "job" && step.jobId !== null) timeOutJob(c, task, step.jobId);
  const end = timeoutEnd(step);
  return end ? endWait(c, task, stepId, end.status, end.fields) : false;
}

/** A job still live at its step's deadline: timed out, its slot freed, its poll dropped, and stopped if asked. */
function timeOutJob(c: Ctx, task: TaskRow, jobId: string): void {
  const job = c.sql.get<{ id: string; status: JobStatus; cancel_on_timeout: number }>(
    "SELECT id, status, cancel_on_timeout FROM jobs WHERE id = ?",
    jobId,
  );
  if (!job || isTerminalJob(job.status)) return;
  c.sql.run("UPDATE jobs SET status = 'timed_out', updated_at = ? WHERE id = ?", c.clock.now(), job.id);
  wakeParked(c, task.tenantId);
  c.sql.run("DELETE FROM work_items WHERE dedupe_key = ? AND status = 'pending'", `poll:${job.id}`);
  if (job.cancel_on_timeout === 1) enqueue(c, [cancelJobItem(task.tenantId, job.id)]);
}
