/** The kinds of work the queue holds; each has one handler in the worker. */
export type WorkKind =
  | "advance"
  | "dispatch"
  | "apply_event"
  | "timeout"
  | "reminder"
  | "cancel_job"
  | "poll"
  | "maintenance"
  | "deliver";

export type WorkItemStatus = "pending" | "leased" | "dead";

/**
 * The work item's transition table (ARCHITECTURE §4.2). A claim leases a pending item; a
 * leased one is given back (a retry, a parked item, an expired lease) or dead-lettered after
 * its last attempt; a completed one is deleted. A dead item never moves.
 */
export const workItemMoves: Readonly<Record<WorkItemStatus, readonly WorkItemStatus[]>> = {
  pending: ["leased"],
  leased: ["pending", "dead"],
  dead: [],
};

/** Whether the table lets a work item in state `from` move to `to`. Staying put is not a move. */
export function canMoveWorkItem(from: WorkItemStatus, to: WorkItemStatus): boolean {
  return workItemMoves[from].includes(to);
}

/**
 * Checks a work item move a store operation is about to write; a move the table lacks is a
 * defect, never data to store. Returns `to`.
 */
export function workItemMove<To extends WorkItemStatus>(from: WorkItemStatus, to: To): To {
  if (!canMoveWorkItem(from, to)) throw new Error(`A ${from} work item cannot move to ${to}.`);
  return to;
}

/** What becomes of a leased item whose attempt did not complete: due again, or dead. */
export type AfterFailure = { to: "pending"; runAt: number } | { to: "dead" };

/**
 * ARCHITECTURE §4.2: an item whose attempt failed, or whose lease expired, is due again at
 * `retryAt`, or goes to the dead letter once it has had its last attempt. The one rule for
 * both a failure its handler reports and a lease that expired.
 */
export function afterFailure(
  item: Pick<WorkItem, "status" | "attempts" | "maxAttempts">,
  retryAt: number,
): AfterFailure {
  if (item.attempts >= item.maxAttempts) return { to: workItemMove(item.status, "dead") };
  return { to: workItemMove(item.status, "pending"), runAt: retryAt };
}

export interface NewWorkItem {
  kind: WorkKind;
  tenantId: string | null;
  payload: Record<string, unknown>;
  runAt?: number;
  priority?: number;
  maxAttempts?: number;
  /** At most one pending item per key. */
  dedupeKey?: string | null;
  /** Items with the same key are never leased at the same time. */
  concurrencyKey?: string | null;
}

export interface WorkItem {
  id: string;
  kind: WorkKind;
  tenantId: string | null;
  payload: Record<string, unknown>;
  runAt: number;
  attempts: number;
  maxAttempts: number;
  status: WorkItemStatus;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  lastError: string | null;
}

/*
 * The work items the stores queue, with their dedupe and concurrency keys. A key is part of
 * the item's meaning: `advance:<task>` keeps one pending advance per task, `task:<task>` keeps
 * two items of one task from running at once, and a wait's timers are cleared by their keys.
 */

/** Attempts before an item of each kind is dead-lettered, unless the item says otherwise. */
export const defaultMaxAttempts: Record<WorkKind, number> = {
  advance: 50,
  dispatch: 12,
  apply_event: 20,
  timeout: 20,
  reminder: 20,
  cancel_job: 8,
  poll: 20,
  maintenance: 5,
  // The outbound retry schedule decides when a delivery is dead; this only bounds runaways.
  deliver: 100,
};

/**
 * The lane of a work item in the claim's turns (ARCHITECTURE §4.2): its tenant, or '' for work
 * without one.
 */
export const laneOf = (item: { tenantId: string | null }): string => item.tenantId ?? "";

/** How long parked work waits before it looks again, if nothing wakes it sooner. */
export const PARK_MS = 5000;

export const advanceItem = (tenantId: string, taskId: string, runAt?: number): NewWorkItem => ({
  kind: "advance",
  tenantId,
  payload: { taskId },
  dedupeKey: `advance:${taskId}`,
  concurrencyKey: `task:${taskId}`,
  ...(runAt === undefined ? {} : { runAt }),
});

export const dispatchItem = (tenantId: string, jobId: string): NewWorkItem => ({
  kind: "dispatch",
  tenantId,
  payload: { jobId },
  dedupeKey: `dispatch:${jobId}`,
});

export const cancelJobItem = (tenantId: string, jobId: string): NewWorkItem => ({
  kind: "cancel_job",
  tenantId,
  payload: { jobId },
  dedupeKey: `cancel:${jobId}`,
});

export const pollItem = (tenantId: string, jobId: string, runAt: number, attempt: number): NewWorkItem => ({
  kind: "poll",
  tenantId,
  payload: { jobId, attempt },
  runAt,
  dedupeKey: `poll:${jobId}`,
});

export const applyItem = (tenantId: string | null, inboxId: string): NewWorkItem => ({
  kind: "apply_event",
  tenantId,
  payload: { inboxId },
  dedupeKey: `apply:${inboxId}`,
});

export const deliverItem = (tenantId: string, deliveryId: string, runAt: number): NewWorkItem => ({
  kind: "deliver",
  tenantId,
  payload: { deliveryId },
  dedupeKey: `deliver:${deliveryId}`,
  runAt,
});

/** The reminder timers an approval may have. */
const reminderTypes = ["reminder", "escalation"] as const;

const timerKey = (kind: "timeout" | "reminder", taskId: string, stepId: string, type?: string) =>
  `${kind}:${taskId}:${stepId}${type ? `:${type}` : ""}`;

/** A wait's deadline (`timeout`) or one of an approval's reminders. */
export const timer = (
  kind: "timeout" | "reminder",
  tenantId: string,
  taskId: string,
  stepId: string,
  runAt: number,
  type?: (typeof reminderTypes)[number],
): NewWorkItem => ({
  kind,
  tenantId,
  payload: { taskId, stepId, ...(type ? { type } : {}) },
  runAt,
  dedupeKey: timerKey(kind, taskId, stepId, type),
});

/**
 * The dedupe keys of every timer a wait may have, for clearing them when it ends. Exact keys,
 * so the dedupe index finds them: a pattern would scan every pending timer.
 */
export const timerKeys = (taskId: string, stepId: string): string[] => [
  timerKey("timeout", taskId, stepId),
  ...reminderTypes.map((t) => timerKey("reminder", taskId, stepId, t)),
];
