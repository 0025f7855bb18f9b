import type { ErrorInfo } from "../../core/errors.ts";
import { LonghaulError } from "../../core/errors.ts";
import {
  canMoveNotification,
  entryChannel,
  type NotificationState,
  type NotifyEntry,
  type NotifyReason,
  owedMessages,
} from "../../core/notification.ts";
import type { TaskRow } from "../../core/task.ts";
import { notifyItem } from "../../core/work-item.ts";
import { json, parseJson } from "../json.ts";
import type { Tx } from "../sql/tx.ts";
import type { Lease, NotificationAttemptResult, NotificationRow } from "../store.ts";
import { complete, fail } from "./queue-ops.ts";

/*
 * An approval's messages (ARCHITECTURE §4.4): owed in the transaction that stores the wait or
 * fires its reminder or escalation, sent one attempt per `notify` item, written once for both
 * dialects. Each attempt emits a task event, so the task's timeline shows it.
 */

interface NotificationDbRow {
  id: string;
  tenant_id: string;
  task_id: string;
  step_id: string;
  step_attempt: number;
  approver: string | null;
  target: string;
  channel: string;
  reason: NotifyReason;
  state: NotificationState;
  attempts: number;
  round_attempts: number;
  last_error: string | null;
  next_attempt_at: number | string | null;
  sent_at: number | string | null;
  created_at: number | string;
  updated_at: number | string;
}

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

const toNotification = (r: NotificationDbRow): NotificationRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  taskId: r.task_id,
  stepId: r.step_id,
  stepAttempt: Number(r.step_attempt),
  approver: r.approver,
  target: parseJson<NotifyEntry>(r.target),
  channel: r.channel,
  reason: r.reason,
  state: r.state,
  attempts: Number(r.attempts),
  roundAttempts: Number(r.round_attempts),
  lastError: r.last_error === null ? null : parseJson<ErrorInfo>(r.last_error),
  nextAttemptAt: num(r.next_attempt_at),
  sentAt: num(r.sent_at),
  createdAt: Number(r.created_at),
});

/**
 * Writes the messages owed on `entries` to `approvers` (none named: the step's links) and
 * queues their first attempt. Takes no lock: the caller holds the task's. Emits nothing.
 */
export async function oweMessages(
  tx: Tx,
  task: TaskRow,
  step: { stepId: string; attempts: number },
  entries: readonly NotifyEntry[],
  approvers: readonly string[],
  reason: NotifyReason,
): Promise<number> {
  const now = tx.clock.now();
  const owed = owedMessages(entries, approvers, reason);
  for (const m of owed) {
    const id = tx.ids.next("ntf");
    const entry = entries[m.entry]!;
    await tx.run(
      `INSERT INTO approval_notifications (id, tenant_id, task_id, step_id, step_attempt, approver, target, channel,
         reason, state, attempts, round_attempts, next_attempt_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, 0, ?, ?, ?)`,
      [
        id,
        task.tenantId,
        task.id,
        step.stepId,
        step.attempts,
        m.approver,
        json(entry),
        entryChannel(entry),
        reason,
        now,
        now,
        now,
      ],
    );
    await tx.enqueue([notifyItem(task.tenantId, id, now)]);
  }
  return owed.length;
}

async function row(tx: Tx, id: string, lock = false): Promise<NotificationDbRow | undefined> {
  return tx.get<NotificationDbRow>(
    `SELECT * FROM approval_notifications WHERE id = ?${lock ? tx.d.forUpdate : ""}`,
    [id],
  );
}

/** A notification by id. No locks. */
export async function notification(tx: Tx, id: string): Promise<NotificationRow | null> {
  const r = await row(tx, id);
  return r ? toNotification(r) : null;
}

/** A task's notifications, oldest first. No locks. */
export async function notificationsOf(tx: Tx, taskId: string): Promise<NotificationRow[]> {
  const rows = await tx.all<NotificationDbRow>(
    "SELECT * FROM approval_notifications WHERE task_id = ? ORDER BY id",
    [taskId],
  );
  return rows.map(toNotification);
}

/** The state an attempt's outcome moves a pending notification to; staying pending is a retry. */
function stateAfter(from: NotificationState, r: NotificationAttemptResult): NotificationState {
  const to: NotificationState =
    r.outcome === "sent"
      ? "sent"
      : r.outcome === "retry"
        ? "pending"
        : r.outcome === "skipped"
          ? "skipped"
          : r.outcome;
  if (to !== from && !canMoveNotification(from, to))
    throw new Error(`A ${from} notification cannot move to ${to}.`);
  return to;
}

/**
 * Records one attempt with its work item's retry or completion in one transaction. Emits
 * `notification.sent`, `notification.failed` (a retry, a dead or a failed message) on the task;
 * a skipped one (its approval ended first) emits nothing. Locks the notification.
 */
export async function recordNotificationAttempt(
  tx: Tx,
  lease: Lease,
  id: string,
  r: NotificationAttemptResult,
): Promise<void> {
  const n = await row(tx, id, true);
  if (n?.state !== "pending") {
    await complete(tx, lease);
    return;
  }
  let state = stateAfter(n.state, r);
  if (state === "pending" && r.outcome === "retry") {
    if ((await fail(tx, lease, r.error.message, r.nextAttemptAt)) === "dead") state = "dead";
  } else {
    await complete(tx, lease);
  }
  const now = tx.clock.now();
  const counted = r.outcome === "skipped" ? 0 : 1;
  await tx.run(
    `UPDATE approval_notifications SET state = ?, attempts = attempts + ?, round_attempts = round_attempts + ?,
       last_error = ?, next_attempt_at = ?, sent_at = ?, updated_at = ? WHERE id = ?`,
    [
      state,
      counted,
      counted,
      r.outcome === "sent" || r.outcome === "skipped" ? null : json(r.error),
      state === "pending" && r.outcome === "retry" ? r.nextAttemptAt : null,
      state === "sent" ? now : null,
      now,
      id,
    ],
  );
  if (r.outcome === "skipped") return;
  const data: Record<string, unknown> = {
    step_id: n.step_id,
    notification_id: id,
    channel: n.channel,
    approver: n.approver,
    reason: n.reason,
    status: state,
    attempts: Number(n.attempts) + 1,
  };
  if (r.outcome !== "sent") data.error = r.error;
  tx.emit(n.tenant_id, n.task_id, r.outcome === "sent" ? "notification.sent" : "notification.failed", data);
}

/**
 * Sends a dead notification again, its schedule from the start. NOTIFICATION_NOT_FOUND for
 * another tenant's or an unknown one; NOTIFICATION_NOT_REPLAYABLE unless it is dead.
 */
export async function replayNotification(
  tx: Tx,
  tenantId: string,
  taskId: string,
  id: string,
): Promise<NotificationRow> {
  const n = await row(tx, id, true);
  if (!n || n.tenant_id !== tenantId || n.task_id !== taskId) {
    throw new LonghaulError(
      "NOTIFICATION_NOT_FOUND",
      `No notification ${id} on task ${taskId} for this tenant.`,
    );
  }
  if (!canMoveNotification(n.state, "pending")) {
    throw new LonghaulError(
      "NOTIFICATION_NOT_REPLAYABLE",
      `Notification ${id} is ${n.state}; only a dead one is sent again.`,
    );
  }
  const now = tx.clock.now();
  await tx.run(
    "UPDATE approval_notifications SET state = 'pending', round_attempts = 0, next_attempt_at = ?, updated_at = ? WHERE id = ?",
    [now, now, id],
  );
  await tx.enqueue([notifyItem(tenantId, id, now)]);
  return toNotification((await row(tx, id))!);
}

/** Of `approvers`, those who have not decided the step yet: whom a reminder goes to. No locks. */
export async function undecided(
  tx: Tx,
  taskId: string,
  stepId: string,
  approvers: readonly string[],
): Promise<string[]> {
  const decided = await tx.all<{ approver: string }>(
    "SELECT approver FROM approval_decisions WHERE task_id = ? AND step_id = ?",
    [taskId, stepId],
  );
  const done = new Set(decided.map((d) => d.approver));
  return approvers.filter((a) => !done.has(a));
}
