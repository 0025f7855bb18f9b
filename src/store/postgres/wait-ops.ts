import type { ErrorInfo } from "../../core/errors.ts";
import { isTerminalJob, type JobStatus } from "../../core/job-state.ts";
import type { StoredStep } from "../../core/replay.ts";
import { isTerminalTask } from "../../core/task-state.ts";
import { type EventMatch, signalMatches, type WaitRequest } from "../../core/wait.ts";
import { json, parseJson } from "../json.ts";
import { lockTask, taskRow } from "../ops/task-ops.ts";
import { wakeParked } from "../ops/tenant-ops.ts";
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
  NewWorkItem,
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
import { advisoryLock, type Ctx } from "./db.ts";
import { emit } from "./event-log.ts";
import { assertLease, enqueue, removeItem } from "./queue-ops.ts";
import { txOf } from "./tx.ts";

async function stepRow(c: Ctx, taskId: string, stepId: string): Promise<StepRow | null> {
  const r = await c.sql.get<StepDbRow>("SELECT * FROM steps WHERE task_id = $1 AND step_id = $2", [
    taskId,
    stepId,
  ]);
  return r ? toStep(r) : null;
}

/**
 * The lock that pairs a signal with a wait for it (ARCHITECTURE §3.5): `recordSignal` (which looks
 * for waits) and `registerWait` of a signal wait (which looks for earlier signals) both take
 * it before they read, so the later one always sees the earlier one's row. Taken before the
 * task lock in both, so the two never wait on each other in opposite orders.
 */
const signalLock = (c: Ctx, tenantId: string, name: string) => advisoryLock(c, `signal:${tenantId}:${name}`);

export async function registerWait(
  c: Ctx,
  lease: Lease,
  taskId: string,
  w: WaitRequest,
): Promise<StoredStep> {
  await assertLease(c, lease);
  if (w.kind === "wait_event") {
    const known = (await taskRow(txOf(c), taskId))!;
    await signalLock(c, known.tenantId, w.match.event);
  }
  const task = (await lockTask(txOf(c), taskId))!;
  const now = c.clock.now();
  const items: NewWorkItem[] = [];
  let jobId: string | null = null;
  if (w.kind === "job") {
    jobId = c.ids.next("j");
    await c.sql.run(
      `INSERT INTO jobs (id, tenant_id, task_id, step_id, provider, status, input, idempotency_key, poll_after_ms,
         cancel_on_timeout, created_at, updated_at, max_tokens)
       VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9, $10, $10, $11)`,
      [
        jobId,
        task.tenantId,
        taskId,
        w.stepId,
        w.provider,
        json(w.input),
        `${taskId}:${w.stepId}`,
        w.pollAfterMs,
        w.cancelOnTimeout,
        now,
        w.maxTokens ?? null,
      ],
    );
    items.push(dispatchItem(task.tenantId, jobId));
  }
  if (w.kind === "wait_event") {
    await c.sql.run(
      "INSERT INTO event_waits (task_id, step_id, tenant_id, name, match) VALUES ($1, $2, $3, $4, $5)",
      [taskId, w.stepId, task.tenantId, w.match.event, json(w.match)],
    );
  }
  const setup = waitSetup(w, task.tenantId, taskId, now, jobId);
  await c.sql.run(
    `INSERT INTO steps (task_id, step_id, position, kind, status, attempts, deadline_at, job_id, config, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'waiting', 1, $5, $6, $7, $8, $8)`,
    [
      taskId,
      w.stepId,
      w.position,
      w.kind,
      setup.deadline,
      jobId,
      setup.config === null ? null : json(setup.config),
      now,
    ],
  );
  await enqueue(c, [...items, ...setup.timers]);
  emit(c, task.tenantId, taskId, "step.waiting", setup.event);
  if (w.kind === "wait_event") {
    // ARCHITECTURE §3.5: a signal that came after the task was created, but before this wait, counts.
    const earlier = await c.sql.all<SignalDbRow>(
      "SELECT id, name, data FROM signals WHERE tenant_id = $1 AND name = $2 AND received_at >= $3 ORDER BY received_at, id",
      [task.tenantId, w.match.event, task.createdAt],
    );
    const hit = earlier.find((s) => signalMatches(w.match, s.name, parseJson(s.data)));
    if (hit) await endWait(c, task, w.stepId, "succeeded", { output: signalOutput(hit) });
  }
  return (await stepRow(c, taskId, w.stepId))!;
}

export async function markHandedOff(c: Ctx, lease: Lease, taskId: string, stepId: string): Promise<void> {
  await assertLease(c, lease);
  await c.sql.run("UPDATE steps SET handed_off = TRUE WHERE task_id = $1 AND step_id = $2", [taskId, stepId]);
}

/**
 * Ends a waiting step (false when it was not waiting), clears its timers and signal
 * subscription, emits `step.<status>`, and queues the task's advance. The caller holds the
 * task's lock.
 */
export async function endWait(
  c: Ctx,
  task: TaskRow,
  stepId: string,
  status: "succeeded" | "failed" | "timed_out",
  fields: { output?: unknown; error?: ErrorInfo },
): Promise<boolean> {
  const now = c.clock.now();
  const changed = await c.sql.run(
    `UPDATE steps SET status = $1, output = $2, error = $3, updated_at = $4
      WHERE task_id = $5 AND step_id = $6 AND status = 'waiting'`,
    [
      status,
      status === "succeeded" ? json(fields.output) : null,
      fields.error ? json(fields.error) : null,
      now,
      task.id,
      stepId,
    ],
  );
  if (changed === 0) return false;
  await c.sql.run("DELETE FROM event_waits WHERE task_id = $1 AND step_id = $2", [task.id, stepId]);
  await c.sql.run("DELETE FROM work_items WHERE status = 'pending' AND dedupe_key = ANY($1::text[])", [
    timerKeys(task.id, stepId),
  ]);
  const data: Record<string, unknown> = { step_id: stepId };
  if (fields.error) data.error = fields.error;
  emit(c, task.tenantId, task.id, `step.${status}`, data);
  if (!isTerminalTask(task.status)) await enqueue(c, [advanceItem(task.tenantId, task.id)]);
  return true;
}

export async function stepForToken(
  c: Ctx,
  tenantId: string,
  taskId: string,
  stepId: string,
): Promise<{ task: TaskRow; step: StepRow } | null> {
  const task = await taskRow(txOf(c), taskId);
  if (!task || task.tenantId !== tenantId) return null;
  const step = await stepRow(c, taskId, stepId);
  return step ? { task, step } : null;
}

/** `stepForToken` with the task locked, for the answer that may end the step. */
async function lockedStepForToken(c: Ctx, tenantId: string, taskId: string, stepId: string) {
  const task = await lockTask(txOf(c), taskId);
  if (!task || task.tenantId !== tenantId) return null;
  const step = await stepRow(c, taskId, stepId);
  return step ? { task, step } : null;
}

export async function completeCallback(c: Ctx, d: CallbackDelivery): Promise<CallbackAnswer> {
  const now = c.clock.now();
  const sha256 = bodySha256(d.body);
  const found = await lockedStepForToken(c, d.tenantId, d.taskId, d.stepId);
  const stored = found
    ? await c.sql.get<{ result_sha256: string | null }>(
        "SELECT result_sha256 FROM steps WHERE task_id = $1 AND step_id = $2",
        [d.taskId, d.stepId],
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
       VALUES ($1, 'callback', 'callback', $2, $3, $4, 'callback', $5, $6, $6)`,
      [
        c.ids.next("evt"),
        `${d.taskId}:${d.stepId}:${d.attempt}:${c.ids.next("cb")}`,
        row.body,
        row.status,
        row.note,
        now,
      ],
    );
  if (verdict) {
    if (verdict === "expired" && found) {
      // ARCHITECTURE §4.4: kept as a late result, visible but not applied; only the first, bounded.
      await c.sql.run(
        "UPDATE steps SET late_output = $1 WHERE task_id = $2 AND step_id = $3 AND late_output IS NULL",
        [json(lateResult(d, sha256, now)), d.taskId, d.stepId],
      );
    }
    await inbox();
    return verdict;
  }
  await endWait(c, found!.task, d.stepId, "succeeded", { output: d.output });
  await c.sql.run("UPDATE steps SET result_sha256 = $1 WHERE task_id = $2 AND step_id = $3", [
    sha256,
    d.taskId,
    d.stepId,
  ]);
  await inbox();
  return "accepted";
}

export async function approvalDecisions(
  c: Ctx,
  taskId: string,
  stepId: string,
): Promise<ApprovalDecisionRow[]> {
  const rows = await c.sql.all<ApprovalDecisionDbRow>(
    "SELECT approver, decision, comment, decided_at FROM approval_decisions WHERE task_id = $1 AND step_id = $2 ORDER BY decided_at, approver",
    [taskId, stepId],
  );
  return rows.map(toApprovalDecision);
}

export async function decideApproval(c: Ctx, d: ApprovalDecisionInput): Promise<WaitAnswer> {
  const now = c.clock.now();
  const found = await lockedStepForToken(c, d.tenantId, d.taskId, d.stepId);
  const why = refusal(found?.task ?? null, found?.step ?? null, d.attempt, now);
  if (why) return why;
  const { task, step } = found!;
  const approver = d.approver ?? "anonymous";
  const inserted = await c.sql.run(
    `INSERT INTO approval_decisions (task_id, step_id, approver, decision, comment, decided_at)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
    [d.taskId, d.stepId, approver, d.decision, d.comment, now],
  );
  if (inserted === 0) return "duplicate_decision";
  emit(c, task.tenantId, task.id, "step.decided", {
    step_id: d.stepId,
    approver,
    decision: d.decision,
    comment: d.comment,
  });
  const output = approvalOutput(step, await approvalDecisions(c, d.taskId, d.stepId));
  if (output) await endWait(c, task, d.stepId, "succeeded", { output });
  return "accepted";
}

export async function recordSignal(
  c: Ctx,
  s: { tenantId: string; name: string; data: unknown; clientId: string | null },
): Promise<{ id: string; duplicate: boolean; matched: number }> {
  const duplicate = async () => {
    const existing = await c.sql.get<{ id: string }>(
      "SELECT id FROM signals WHERE tenant_id = $1 AND client_id = $2",
      [s.tenantId, s.clientId],
    );
    return existing ? { id: existing.id, duplicate: true, matched: 0 } : null;
  };
  if (s.clientId !== null) {
    const seen = await duplicate();
    if (seen) return seen;
  }
  await signalLock(c, s.tenantId, s.name);
  const row = { id: c.ids.next("sig"), name: s.name, data: json(s.data) };
  const inserted = await c.sql.run(
    `INSERT INTO signals (id, tenant_id, name, data, client_id, received_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id, client_id) WHERE client_id IS NOT NULL DO NOTHING`,
    [row.id, s.tenantId, s.name, row.data, s.clientId, c.clock.now()],
  );
  // A concurrent signal with the same client id committed first.
  if (inserted === 0) return (await duplicate())!;
  let matched = 0;
  // In task order, so two signals that end waits of the same tasks lock them in the same order.
  const waits = await c.sql.all<{ task_id: string; step_id: string; match: string }>(
    "SELECT task_id, step_id, match FROM event_waits WHERE tenant_id = $1 AND name = $2 ORDER BY task_id, step_id",
    [s.tenantId, s.name],
  );
  for (const w of waits) {
    if (!signalMatches(parseJson<EventMatch>(w.match), s.name, s.data)) continue;
    const task = await lockTask(txOf(c), w.task_id);
    if (task && (await endWait(c, task, w.step_id, "succeeded", { output: signalOutput(row) }))) matched++;
  }
  return { id: row.id, duplicate: false, matched };
}

export async function fireReminder(
  c: Ctx,
  lease: Lease,
  taskId: string,
  stepId: string,
  type: "reminder" | "escalation",
): Promise<boolean> {
  await assertLease(c, lease);
  await removeItem(c, lease);
  const task = await lockTask(txOf(c), taskId);
  const step = await stepRow(c, taskId, stepId);
  if (!task || !step || step.status !== "waiting" || isTerminalTask(task.status)) return false;
  const event = reminderEvent(step, type);
  emit(c, task.tenantId, taskId, event.type, event.data);
  return true;
}

/** At a wait's deadline: each kind's timeout policy (ARCHITECTURE §4.4). */
export async function fireTimeout(c: Ctx, lease: Lease, taskId: string, stepId: string): Promise<boolean> {
  await assertLease(c, lease);
  await removeItem(c, lease);
  const task = await lockTask(txOf(c), taskId);
  const step = await stepRow(c, taskId, stepId);
  if (!task || !step || step.status !== "waiting") return false;
  if (step.kind === "job" && step.jobId !== null) await timeOutJob(c, task, step.jobId);
  const end = timeoutEnd(step);
  return end ? endWait(c, task, stepId, end.status, end.fields) : false;
}

/** A job still live at its step's deadline: timed out, its slot freed, its poll dropped, and stopped if asked. */
async function timeOutJob(c: Ctx, task: TaskRow, jobId: string): Promise<void> {
  const job = await c.sql.get<{ id: string; status: JobStatus; cancel_on_timeout: boolean }>(
    "SELECT id, status, cancel_on_timeout FROM jobs WHERE id = $1 FOR UPDATE",
    [jobId],
  );
  if (!job || isTerminalJob(job.status)) return;
  await c.sql.run("UPDATE jobs SET status = 'timed_out', updated_at = $1 WHERE id = $2", [
    c.clock.now(),
    job.id,
  ]);
  await wakeParked(txOf(c), task.tenantId);
  await c.sql.run("DELETE FROM work_items WHERE dedupe_key = $1 AND status = 'pending'", [`poll:${job.id}`]);
  if (job.cancel_on_timeout) await enqueue(c, [cancelJobItem(task.tenantId, job.id)]);
}
