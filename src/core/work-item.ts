import { LonghaulError } from "./errors.ts";

/** What each kind of work carries: the one place a work item's payload is spelled. */
export interface WorkPayloads {
  advance: { taskId: string };
  dispatch: { jobId: string };
  apply_event: { inboxId: string };
  timeout: { taskId: string; stepId: string };
  reminder: { taskId: string; stepId: string; type: ReminderType };
  cancel_job: { jobId: string };
  poll: { jobId: string; attempt: number };
  maintenance: Record<string, never>;
  deliver: { deliveryId: string };
  notify: { notificationId: string };
}

/** The kinds of work the queue holds; each has one use case the worker calls. */
export type WorkKind = keyof WorkPayloads;

const kindSet: Record<WorkKind, true> = {
  advance: true,
  dispatch: true,
  apply_event: true,
  timeout: true,
  reminder: true,
  cancel_job: true,
  poll: true,
  maintenance: true,
  deliver: true,
  notify: true,
};
/** Every kind of work, as a list (the queue metrics name each, at zero too). */
export const workKinds = Object.keys(kindSet) as readonly WorkKind[];

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

/**
 * An item to queue. The queue holds any payload; the constructors below write what each
 * kind carries (`WorkPayloads`), and `typedWorkItem` reads it back.
 */
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

/** A work item as the queue holds it: its payload is what was stored, read by `typedWorkItem`. */
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

/** A claimed item whose payload has been read for its kind. */
export type WorkItemOf<K extends WorkKind> = Omit<WorkItem, "kind" | "payload"> & {
  kind: K;
  payload: WorkPayloads[K];
};
export type TypedWorkItem = { [K in WorkKind]: WorkItemOf<K> }[WorkKind];

type Field = "string" | "number";
/** The fields each kind's payload must hold; `reminder.type` and `poll.attempt` have defaults. */
const payloadFields: { [K in WorkKind]: Record<string, Field> } = {
  advance: { taskId: "string" },
  dispatch: { jobId: "string" },
  apply_event: { inboxId: "string" },
  timeout: { taskId: "string", stepId: "string" },
  reminder: { taskId: "string", stepId: "string" },
  cancel_job: { jobId: "string" },
  poll: { jobId: "string" },
  maintenance: {},
  deliver: { deliveryId: "string" },
  notify: { notificationId: "string" },
};

/**
 * Reads a claimed item's payload for its kind. A payload that lacks a field its kind needs
 * (a row written by hand, or by a version that spelled it otherwise) is VALIDATION_FAILED,
 * so the item fails, retries and is dead-lettered, instead of running on a made-up id.
 */
export function typedWorkItem(item: WorkItem): TypedWorkItem {
  const fields = payloadFields[item.kind];
  if (!fields)
    throw new LonghaulError("VALIDATION_FAILED", `Work item ${item.id} has an unknown kind "${item.kind}".`);
  const p = item.payload ?? {};
  for (const [name, type] of Object.entries(fields)) {
    if (typeof p[name] !== type || p[name] === "") {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `Work item ${item.id} (${item.kind}) has no ${type} "${name}" in its payload; it cannot run.`,
      );
    }
  }
  if (item.kind === "reminder") {
    return {
      ...item,
      kind: "reminder",
      payload: {
        ...(p as WorkPayloads["reminder"]),
        type: p.type === "escalation" ? "escalation" : "reminder",
      },
    };
  }
  if (item.kind === "poll") {
    const attempt = typeof p.attempt === "number" && p.attempt >= 1 ? p.attempt : 1;
    return { ...item, kind: "poll", payload: { jobId: p.jobId as string, attempt } };
  }
  return item as TypedWorkItem;
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
  notify: 100,
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

/** One attempt of an approval's message (src/notify); its retry schedule is the outbound one. */
export const notifyItem = (tenantId: string, notificationId: string, runAt: number): NewWorkItem => ({
  kind: "notify",
  tenantId,
  payload: { notificationId },
  dedupeKey: `notify:${notificationId}`,
  runAt,
});

/** The reminder timers an approval may have. */
const reminderTypes = ["reminder", "escalation"] as const;
export type ReminderType = (typeof reminderTypes)[number];

const timerKey = (kind: "timeout" | "reminder", taskId: string, stepId: string, type?: string) =>
  `${kind}:${taskId}:${stepId}${type ? `:${type}` : ""}`;

/** A wait's deadline (`timeout`) or one of an approval's reminders. */
export function timer(
  kind: "timeout",
  tenantId: string,
  taskId: string,
  stepId: string,
  runAt: number,
): NewWorkItem;
export function timer(
  kind: "reminder",
  tenantId: string,
  taskId: string,
  stepId: string,
  runAt: number,
  type: ReminderType,
): NewWorkItem;
export function timer(
  kind: "timeout" | "reminder",
  tenantId: string,
  taskId: string,
  stepId: string,
  runAt: number,
  type?: ReminderType,
): NewWorkItem {
  const dedupeKey = timerKey(kind, taskId, stepId, type);
  return kind === "timeout"
    ? { kind, tenantId, payload: { taskId, stepId }, runAt, dedupeKey }
    : { kind, tenantId, payload: { taskId, stepId, type: type ?? "reminder" }, runAt, dedupeKey };
}

/** The one recurring item: the maintenance pass, at `runAt`. */
export const maintenanceItem = (runAt: number): NewWorkItem => ({
  kind: "maintenance",
  tenantId: null,
  payload: {},
  runAt,
  dedupeKey: "maintenance",
});

/**
 * The dedupe keys of every timer a wait may have, for clearing them when it ends. Exact keys,
 * so the dedupe index finds them: a pattern would scan every pending timer.
 */
export const timerKeys = (taskId: string, stepId: string): string[] => [
  timerKey("timeout", taskId, stepId),
  ...reminderTypes.map((t) => timerKey("reminder", taskId, stepId, t)),
];
