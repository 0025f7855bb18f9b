import type { ErrorInfo } from "../../core/errors.ts";
import { isTerminalJob, type JobStatus, jobMove } from "../../core/job.ts";
import { inlineStored } from "../../core/payload.ts";
import type { StoredStep } from "../../core/replay.ts";
import { stepGuard, waitEnds } from "../../core/step.ts";
import { isTerminalTask } from "../../core/task.ts";
import {
  type ApprovalConfig,
  approvalOutput,
  bodySha256,
  callbackInboxRow,
  callbackVerdict,
  type DecisionAnswer,
  decidedEvent,
  decisionIdentity,
  type EventMatch,
  lateResult,
  refusal,
  reminderEvent,
  signalMatches,
  timeoutEnd,
  type WaitRequest,
  waitSetup,
} from "../../core/wait.ts";
import { advanceItem, cancelJobItem, dispatchItem, timer, timerKeys } from "../../core/work-item.ts";
import { json, parseJson } from "../json.ts";
import {
  type ApprovalDecisionDbRow,
  type SignalDbRow,
  type StepDbRow,
  signalOutput,
  toApprovalDecision,
  toStep,
} from "../rows.ts";
import { inStates } from "../sql/states.ts";
import type { Tx } from "../sql/tx.ts";
import type {
  ApprovalDecisionInput,
  ApprovalDecisionRow,
  CallbackAnswer,
  CallbackDelivery,
  Lease,
  NewWorkItem,
  StepRow,
  TaskRow,
} from "../store.ts";
import { wakeAwaitingRoom } from "./admission-ops.ts";
import { oweMessages, undecided } from "./notification-ops.ts";
import { assertLease, removeItem } from "./queue-ops.ts";
import { lockTask, taskRow } from "./task-ops.ts";
import { wakeParked } from "./tenant-ops.ts";

/*
 * Waits: registering a step that waits (a job, a callback, an approval, a signal), and what
 * ends it (callback, decision, signal, timeout), and the signals' retention, written once for
 * both dialects. Every operation that may end a step takes the task's lock first
 * (`lockTask`); a signal and a wait for it also meet at the signal's lock, taken before the
 * task's.
 */

type EndFields = { output?: unknown; error?: ErrorInfo };

/** The states a wait's end may move (core's `stepGuard`): a step in them still waits. */
const waitGuard = stepGuard(waitEnds);

/** The statements of `endWait`; `end` moves only a step that still waits (`waitGuard`). */
const waitSql = {
  end: `UPDATE steps SET status = ?, output = ?, error = ?, updated_at = ?
      WHERE task_id = ? AND step_id = ? AND ${inStates("status", waitGuard)}`,
  dropSubscription: "DELETE FROM event_waits WHERE task_id = ? AND step_id = ?",
  dropTimers: (n: number) =>
    `DELETE FROM work_items WHERE status = 'pending' AND dedupe_key IN (${Array(n).fill("?").join(", ")})`,
};

/** waitSql.end's parameters. */
const endParams = (now: number, taskId: string, stepId: string, status: string, f: EndFields) => [
  status,
  // What a caller or provider sent is never taken for a reference to a blob (§4.10).
  status === "succeeded" ? json(inlineStored(f.output)) : null,
  f.error ? json(f.error) : null,
  now,
  taskId,
  stepId,
];

/** The data of the `step.<status>` event that ends a wait. */
function endEvent(stepId: string, f: EndFields) {
  const data: Record<string, unknown> = { step_id: stepId };
  if (f.error) data.error = f.error;
  return data;
}

async function stepRow(tx: Tx, taskId: string, stepId: string): Promise<StepRow | null> {
  const r = await tx.get<StepDbRow>("SELECT * FROM steps WHERE task_id = ? AND step_id = ?", [
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
const signalLock = (tx: Tx, tenantId: string, name: string) => tx.lock(`signal:${tenantId}:${name}`);

/**
 * Stores a step that waits, with its job or signal subscription and its timers. Locks: the
 * lease's item, the signal's lock (signal waits), then the task. Emits `step.waiting` (and
 * `step.succeeded` when an earlier signal already matches). Enqueues the job's dispatch, the
 * step's timers, and the task's advance if an earlier signal ended it.
 */
export async function registerWait(
  tx: Tx,
  lease: Lease,
  taskId: string,
  w: WaitRequest,
): Promise<StoredStep> {
  await assertLease(tx, lease);
  if (w.kind === "wait_event") {
    const known = (await taskRow(tx, taskId))!;
    await signalLock(tx, known.tenantId, w.match.event);
  }
  const task = (await lockTask(tx, taskId))!;
  const now = tx.clock.now();
  const items: NewWorkItem[] = [];
  let jobId: string | null = null;
  if (w.kind === "job") {
    jobId = tx.ids.next("j");
    await tx.run(
      `INSERT INTO jobs (id, tenant_id, task_id, step_id, provider, status, input, idempotency_key, poll_after_ms,
         cancel_on_timeout, created_at, updated_at, max_tokens)
       VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)`,
      [
        jobId,
        task.tenantId,
        taskId,
        w.stepId,
        w.provider,
        json(w.input),
        `${taskId}:${w.stepId}`,
        w.pollAfterMs,
        tx.bool(w.cancelOnTimeout),
        now,
        now,
        w.maxTokens ?? null,
      ],
    );
    items.push(dispatchItem(task.tenantId, jobId));
  }
  if (w.kind === "wait_event") {
    await tx.run(
      "INSERT INTO event_waits (task_id, step_id, tenant_id, name, match) VALUES (?, ?, ?, ?, ?)",
      [taskId, w.stepId, task.tenantId, w.match.event, json(w.match)],
    );
  }
  const setup = waitSetup(w, task.tenantId, taskId, now, jobId);
  await tx.run(
    `INSERT INTO steps (task_id, step_id, position, kind, status, attempts, deadline_at, job_id, config, created_at, updated_at)
     VALUES (?, ?, ?, ?, 'waiting', 1, ?, ?, ?, ?, ?)`,
    [
      taskId,
      w.stepId,
      w.position,
      w.kind,
      setup.deadline,
      jobId,
      setup.config === null ? null : json(setup.config),
      now,
      now,
    ],
  );
  await tx.enqueue([...items, ...setup.timers]);
  tx.emit(task.tenantId, taskId, "step.waiting", setup.event);
  if (w.kind === "approval" && w.approval.notify?.length) {
    // ARCHITECTURE §4.4: the messages are owed with the wait, so the links they carry work at once.
    await oweMessages(
      tx,
      task,
      { stepId: w.stepId, attempts: 1 },
      w.approval.notify,
      w.approval.approvers,
      "request",
    );
  }
  if (w.kind === "wait_event") {
    // ARCHITECTURE §3.5: a signal that came after the task was created, but before this wait, counts.
    const earlier = await tx.all<SignalDbRow>(
      "SELECT id, name, data FROM signals WHERE tenant_id = ? AND name = ? AND received_at >= ? ORDER BY received_at, id",
      [task.tenantId, w.match.event, task.createdAt],
    );
    const hit = earlier.find((s) => signalMatches(w.match, s.name, parseJson(s.data)));
    if (hit) await endWait(tx, task, w.stepId, "succeeded", { output: signalOutput(hit) });
  }
  return (await stepRow(tx, taskId, w.stepId))!;
}

/** Notes that the step's capability was handed to its worker. Locks: the lease's item. No events. */
export async function markHandedOff(tx: Tx, lease: Lease, taskId: string, stepId: string): Promise<void> {
  await assertLease(tx, lease);
  await tx.run(`UPDATE steps SET handed_off = ${tx.d.true} WHERE task_id = ? AND step_id = ?`, [
    taskId,
    stepId,
  ]);
}

/**
 * Ends a waiting step (false when it was not waiting), clears its timers and signal
 * subscription. Takes no lock itself: the caller holds the task's. Emits `step.<status>`;
 * enqueues the task's advance unless the task has ended.
 */
export async function endWait(
  tx: Tx,
  task: TaskRow,
  stepId: string,
  status: (typeof waitEnds)[number],
  fields: EndFields,
): Promise<boolean> {
  const changed = await tx.run(waitSql.end, endParams(tx.clock.now(), task.id, stepId, status, fields));
  if (changed === 0) return false;
  await tx.run(waitSql.dropSubscription, [task.id, stepId]);
  const keys = timerKeys(task.id, stepId);
  await tx.run(waitSql.dropTimers(keys.length), keys);
  tx.emit(task.tenantId, task.id, `step.${status}`, endEvent(stepId, fields));
  if (!isTerminalTask(task.status)) await tx.enqueue([advanceItem(task.tenantId, task.id)]);
  return true;
}

/** The task and step a capability names, if the tenant owns the task. No locks. */
export async function stepForToken(
  tx: Tx,
  tenantId: string,
  taskId: string,
  stepId: string,
): Promise<{ task: TaskRow; step: StepRow } | null> {
  const task = await taskRow(tx, taskId);
  if (!task || task.tenantId !== tenantId) return null;
  const step = await stepRow(tx, taskId, stepId);
  return step ? { task, step } : null;
}

/** `stepForToken` with the task locked, for the answer that may end the step. */
async function lockedStepForToken(tx: Tx, tenantId: string, taskId: string, stepId: string) {
  const task = await lockTask(tx, taskId);
  if (!task || task.tenantId !== tenantId) return null;
  const step = await stepRow(tx, taskId, stepId);
  return step ? { task, step } : null;
}

/**
 * A callback's result: ends the step, or is refused (and an expired one kept as a late
 * result); every delivery is recorded in the inbox. Locks: the task. Emits `step.succeeded`
 * and enqueues the task's advance when accepted.
 */
export async function completeCallback(tx: Tx, d: CallbackDelivery): Promise<CallbackAnswer> {
  const now = tx.clock.now();
  const sha256 = bodySha256(d.body);
  const found = await lockedStepForToken(tx, d.tenantId, d.taskId, d.stepId);
  const stored = found
    ? await tx.get<{ result_sha256: string | null }>(
        "SELECT result_sha256 FROM steps WHERE task_id = ? AND step_id = ?",
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
    tx.run(
      `INSERT INTO inbox_events (id, source, provider, event_id, body, status, type, note, received_at, updated_at)
       VALUES (?, 'callback', 'callback', ?, ?, ?, 'callback', ?, ?, ?)`,
      [
        tx.ids.next("evt"),
        `${d.taskId}:${d.stepId}:${d.attempt}:${tx.ids.next("cb")}`,
        row.body,
        row.status,
        row.note,
        now,
        now,
      ],
    );
  if (verdict) {
    if (verdict === "expired" && found) {
      // ARCHITECTURE §4.4: kept as a late result, visible but not applied; only the first, bounded.
      await tx.run(
        "UPDATE steps SET late_output = ? WHERE task_id = ? AND step_id = ? AND late_output IS NULL",
        [json(lateResult(d, sha256, now)), d.taskId, d.stepId],
      );
    }
    await inbox();
    return verdict;
  }
  await endWait(tx, found!.task, d.stepId, "succeeded", { output: d.output });
  await tx.run("UPDATE steps SET result_sha256 = ? WHERE task_id = ? AND step_id = ?", [
    sha256,
    d.taskId,
    d.stepId,
  ]);
  await inbox();
  return "accepted";
}

/** An approval step's decisions so far. No locks. */
export async function approvalDecisions(
  tx: Tx,
  taskId: string,
  stepId: string,
): Promise<ApprovalDecisionRow[]> {
  const rows = await tx.all<ApprovalDecisionDbRow>(
    `SELECT approver, decision, comment, decided_at, channel, claimed_by, key_id, user_id, address, user_agent
     FROM approval_decisions WHERE task_id = ? AND step_id = ? ORDER BY decided_at, approver`,
    [taskId, stepId],
  );
  return rows.map(toApprovalDecision);
}

/**
 * Records an approver's decision, and ends the step once the decisions settle it. Locks: the
 * task. Emits `step.decided`, then `step.succeeded` with the task's advance enqueued when settled.
 */
export async function decideApproval(tx: Tx, d: ApprovalDecisionInput): Promise<DecisionAnswer> {
  const now = tx.clock.now();
  const found = await lockedStepForToken(tx, d.tenantId, d.taskId, d.stepId);
  const why = refusal(found?.task ?? null, found?.step ?? null, d.attempt, now);
  if (why) return why;
  const { task, step } = found!;
  const config = step.config as ApprovalConfig;
  const who = decisionIdentity(config, task.userId, d);
  if (typeof who === "string") return who;
  const { approver, claimedBy } = who;
  const keyId = d.keyHash
    ? ((await tx.get<{ id: string }>("SELECT id FROM api_keys WHERE key_hash = ?", [d.keyHash]))?.id ?? null)
    : null;
  const inserted = await tx.run(
    `INSERT INTO approval_decisions
       (task_id, step_id, approver, decision, comment, decided_at, channel, claimed_by, key_id, user_id, address, user_agent)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    [
      d.taskId,
      d.stepId,
      approver,
      d.decision,
      d.comment,
      now,
      d.channel,
      claimedBy,
      keyId,
      d.userId ?? null,
      d.address ?? null,
      d.userAgent ?? null,
    ],
  );
  if (inserted === 0) return "duplicate_decision";
  tx.emit(task.tenantId, task.id, "step.decided", decidedEvent(config, { ...d, approver, claimedBy }));
  const output = approvalOutput(step, await approvalDecisions(tx, d.taskId, d.stepId));
  if (output) await endWait(tx, task, d.stepId, "succeeded", { output });
  return "accepted";
}

/**
 * Stores a signal (once per client id) and ends the waits it matches. Locks: the signal's
 * lock, then each matched task in task order, so two signals ending waits of the same tasks
 * lock them in the same order. Emits `step.succeeded` and enqueues an advance per ended wait.
 */
export async function recordSignal(
  tx: Tx,
  s: { tenantId: string; name: string; data: unknown; clientId: string | null },
): Promise<{ id: string; duplicate: boolean; matched: number }> {
  const duplicate = async () => {
    const existing = await tx.get<{ id: string }>(
      "SELECT id FROM signals WHERE tenant_id = ? AND client_id = ?",
      [s.tenantId, s.clientId],
    );
    return existing ? { id: existing.id, duplicate: true, matched: 0 } : null;
  };
  if (s.clientId !== null) {
    const seen = await duplicate();
    if (seen) return seen;
  }
  await signalLock(tx, s.tenantId, s.name);
  const row = { id: tx.ids.next("sig"), name: s.name, data: json(s.data) };
  const inserted = await tx.run(
    `INSERT INTO signals (id, tenant_id, name, data, client_id, received_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (tenant_id, client_id) WHERE client_id IS NOT NULL DO NOTHING`,
    [row.id, s.tenantId, s.name, row.data, s.clientId, tx.clock.now()],
  );
  // A concurrent signal with the same client id committed first.
  if (inserted === 0) return (await duplicate())!;
  let matched = 0;
  const waits = await tx.all<{ task_id: string; step_id: string; match: string }>(
    "SELECT task_id, step_id, match FROM event_waits WHERE tenant_id = ? AND name = ? ORDER BY task_id, step_id",
    [s.tenantId, s.name],
  );
  for (const w of waits) {
    if (!signalMatches(parseJson<EventMatch>(w.match), s.name, s.data)) continue;
    const task = await lockTask(tx, w.task_id);
    if (task && (await endWait(tx, task, w.step_id, "succeeded", { output: signalOutput(row) }))) matched++;
  }
  return { id: row.id, duplicate: false, matched };
}

/**
 * A wait's reminder or escalation timer fired. Locks: the lease's item (completed), then the
 * task. Emits `step.reminder` or `step.escalated` while the step still waits. Enqueues nothing.
 */
export async function fireReminder(
  tx: Tx,
  lease: Lease,
  taskId: string,
  stepId: string,
  type: "reminder" | "escalation",
): Promise<boolean> {
  await assertLease(tx, lease);
  await removeItem(tx, lease);
  const task = await lockTask(tx, taskId);
  const step = await stepRow(tx, taskId, stepId);
  if (!task || !step || !waitGuard.includes(step.status) || isTerminalTask(task.status)) return false;
  if (type === "escalation") return escalate(tx, task, step);
  const event = reminderEvent(step, type);
  tx.emit(task.tenantId, taskId, event.type, event.data);
  const config = step.config as ApprovalConfig;
  if (config.notify?.length) {
    const named = config.approvers.length > 0;
    const to = named ? await undecided(tx, taskId, stepId, config.approvers) : [];
    if (!named || to.length > 0) await oweMessages(tx, task, step, config.notify, to, "reminder");
  }
  return true;
}

/**
 * An approval's escalation, once: its `escalateTo` become approvers (on an approval with named
 * approvers; one without keeps its shared links) and are told on the escalation's channels.
 * Emits `step.escalated`. The caller holds the task's lock.
 */
async function escalate(tx: Tx, task: TaskRow, step: StepRow): Promise<boolean> {
  const config = step.config as ApprovalConfig;
  if (config.escalated === true) return false;
  const added = config.escalateTo.filter((a) => !config.approvers.includes(a));
  const named = config.approvers.length > 0;
  const next: ApprovalConfig = {
    ...config,
    escalated: true,
    approvers: named ? [...config.approvers, ...added] : [],
  };
  await tx.run("UPDATE steps SET config = ?, updated_at = ? WHERE task_id = ? AND step_id = ?", [
    json(next),
    tx.clock.now(),
    task.id,
    step.stepId,
  ]);
  const event = reminderEvent(step, "escalation");
  tx.emit(task.tenantId, task.id, event.type, event.data);
  const channels = config.escalateNotify ?? config.notify ?? [];
  if (channels.length > 0 && (added.length > 0 || !named)) {
    await oweMessages(tx, task, step, channels, named ? added : [], "escalation");
  }
  return true;
}

/**
 * At a wait's deadline: each kind's timeout policy (ARCHITECTURE §4.4). Locks: the lease's item
 * (completed), the task, then its job. Emits the step's end; enqueues the task's advance, and
 * a `cancel_job` for a live job that asked for it; wakes the tenant's parked work.
 */
export async function fireTimeout(tx: Tx, lease: Lease, taskId: string, stepId: string): Promise<boolean> {
  await assertLease(tx, lease);
  await removeItem(tx, lease);
  const task = await lockTask(tx, taskId);
  const step = await stepRow(tx, taskId, stepId);
  if (!task || !step || !waitGuard.includes(step.status)) return false;
  if (step.kind === "job" && step.jobId !== null) await timeOutJob(tx, task, step.jobId);
  const config = step.config as ApprovalConfig | null;
  if (step.kind === "approval" && config?.onTimeout === "escalate" && config.escalated !== true) {
    // ARCHITECTURE §4.4: `escalate` at the deadline escalates once and waits on, by the
    // escalation's delay (or the original wait again); the next deadline times the step out.
    const more = config.escalateAfterMs ?? config.timeoutMs ?? 0;
    const deadline = tx.clock.now() + more;
    await tx.run("UPDATE steps SET deadline_at = ? WHERE task_id = ? AND step_id = ?", [
      deadline,
      taskId,
      stepId,
    ]);
    await escalate(tx, task, step);
    // Links already sent expire a day after the old deadline: who has not decided gets links
    // minted for the new one.
    const named = config.approvers.length > 0;
    const to = named ? await undecided(tx, taskId, stepId, config.approvers) : [];
    if (config.notify?.length && (!named || to.length > 0)) {
      await oweMessages(tx, task, step, config.notify, to, "reminder");
    }
    await tx.enqueue([timer("timeout", task.tenantId, taskId, stepId, deadline)]);
    return false;
  }
  const end = timeoutEnd(step);
  return end ? endWait(tx, task, stepId, end.status, end.fields) : false;
}

/** A job still live at its step's deadline: timed out, its slot freed, its poll dropped, and stopped if asked. */
async function timeOutJob(tx: Tx, task: TaskRow, jobId: string): Promise<void> {
  const job = await tx.get<{ id: string; status: JobStatus; cancel_on_timeout: boolean | number }>(
    `SELECT id, status, cancel_on_timeout FROM jobs WHERE id = ?${tx.d.forUpdate}`,
    [jobId],
  );
  if (!job || isTerminalJob(job.status)) return;
  await tx.run("UPDATE jobs SET status = ?, updated_at = ? WHERE id = ?", [
    jobMove(job.status, "timed_out"),
    tx.clock.now(),
    job.id,
  ]);
  await wakeParked(tx, task.tenantId);
  await wakeAwaitingRoom(tx);
  await tx.run("DELETE FROM work_items WHERE dedupe_key = ? AND status = 'pending'", [`poll:${job.id}`]);
  // A boolean on PostgreSQL, 1 or 0 under SQLite.
  if (job.cancel_on_timeout === true || job.cancel_on_timeout === 1) {
    await tx.enqueue([cancelJobItem(task.tenantId, job.id)]);
  }
}

/** Deletes signals received before `before`. No locks, no events. */
export async function pruneSignals(tx: Tx, before: number): Promise<number> {
  return tx.run("DELETE FROM signals WHERE received_at < ?", [before]);
}
