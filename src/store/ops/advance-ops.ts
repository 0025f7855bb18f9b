import { countsSlots, taskStart } from "../../core/quota.ts";
import type { RunOutcome, StoredStep } from "../../core/replay.ts";
import { runOutcomes, stepGuard } from "../../core/step.ts";
import { isTerminalTask, type TaskStatus } from "../../core/task.ts";
import { advanceItem, PARK_MS } from "../../core/work-item.ts";
import { json } from "../json.ts";
import { type StepDbRow, toStep } from "../rows.ts";
import { inStates } from "../sql/states.ts";
import type { Tx } from "../sql/tx.ts";
import type { AdvanceResult, Lease, TaskRow } from "../store.ts";
import { assertLease, park, removeItem } from "./queue-ops.ts";
import { lockTask, setTaskStatus, taskRow } from "./task-ops.ts";
import { slotsInUse, tenant } from "./tenant-ops.ts";

/*
 * One advance of a task (ARCHITECTURE §4.4): what it reads, its start (or its parking under
 * its tenant's job limit, §4.6), the `step.run` outcomes it stores and its end. Every write
 * asserts its lease first, then takes the task's lock.
 */

/**
 * Stores a `step.run` attempt over a step the table lets take each of its outcomes (core's
 * `stepGuard`): a running one; a stored end is final.
 */
const storeRunSql = `INSERT INTO steps (task_id, step_id, position, kind, status, output, error, attempts, created_at, updated_at)
     VALUES (?, ?, ?, 'run', ?, ?, ?, ?, ?, ?)
     ON CONFLICT (task_id, step_id) DO UPDATE SET status = excluded.status, output = excluded.output,
       error = excluded.error, attempts = excluded.attempts, updated_at = excluded.updated_at
     WHERE ${inStates("steps.status", stepGuard(runOutcomes))}`;

/** A task with the steps it has stored, in order, for replay. No locks. */
export async function loadForAdvance(
  tx: Tx,
  taskId: string,
): Promise<{ task: TaskRow; history: StoredStep[] } | null> {
  const task = await taskRow(tx, taskId);
  if (!task) return null;
  const steps = await tx.all<StepDbRow>("SELECT * FROM steps WHERE task_id = ? ORDER BY position", [taskId]);
  return { task, history: steps.map(toStep) };
}

/** A task's status alone, or null. No locks. */
export async function taskStatus(tx: Tx, taskId: string): Promise<TaskStatus | null> {
  return (
    (await tx.get<{ status: TaskStatus }>("SELECT status FROM tasks WHERE id = ?", [taskId]))?.status ?? null
  );
}

/**
 * Marks a non-terminal task running. Locks: the task. Emits `task.running` when it moves.
 * `ended`: the task has ended and the item is deleted. `parked`: a new task of a tenant at its
 * job limit (or over a parking budget) waits as pending, its item given back (core's
 * `taskStart`, ARCHITECTURE §4.6).
 */
export async function beginAdvance(
  tx: Tx,
  lease: Lease,
  taskId: string,
): Promise<"started" | "ended" | "parked"> {
  await assertLease(tx, lease);
  const task = await lockTask(tx, taskId);
  if (!task || isTerminalTask(task.status)) {
    await removeItem(tx, lease);
    return "ended";
  }
  if (task.status === "pending" && (await startVerdict(tx, task.tenantId)) === "parked") {
    await park(tx, lease, tx.clock.now() + PARK_MS);
    return "parked";
  }
  if (task.status !== "running") await setTaskStatus(tx, task, "running");
  return "started";
}

/** Core's `taskStart` for a new task of the tenant, its slots counted only when they can decide. */
async function startVerdict(tx: Tx, tenantId: string): Promise<"started" | "parked"> {
  const t = await tenant(tx, tenantId);
  const counted = t !== null && countsSlots(t.quotas) && taskStart(t, 0) === "started";
  return taskStart(t, counted ? await slotsInUse(tx, tenantId) : 0);
}

/**
 * Stores a `step.run` outcome. Locks: the task. Emits `step.<status>` once the step has
 * ended. The primary key (task_id, step_id) and the status guard keep a stored outcome final.
 */
export async function storeRunOutcome(tx: Tx, lease: Lease, taskId: string, o: RunOutcome): Promise<void> {
  await assertLease(tx, lease);
  const task = (await lockTask(tx, taskId))!;
  const now = tx.clock.now();
  const changed = await tx.run(storeRunSql, [
    taskId,
    o.stepId,
    o.position,
    o.status,
    o.status === "succeeded" ? json(o.output) : null,
    o.status === "succeeded" ? null : json(o.error),
    o.attempts,
    now,
    now,
  ]);
  if (changed > 0 && o.status !== "running") {
    tx.emit(task.tenantId, taskId, `step.${o.status}`, { step_id: o.stepId, kind: "run" });
  }
}

/**
 * Ends an advance: deletes its item and moves the task as the replay decided. Locks: the
 * task. Emits the run's new `task.log` lines (ARCHITECTURE §4.4), then `task.<status>` when
 * it moves. Enqueues the retry's advance. A task that ended meanwhile (canceled) gets neither.
 */
export async function finishAdvance(tx: Tx, lease: Lease, taskId: string, r: AdvanceResult): Promise<void> {
  await assertLease(tx, lease);
  const task = await lockTask(tx, taskId);
  await removeItem(tx, lease);
  if (!task || isTerminalTask(task.status)) return;
  for (const line of r.logs ?? []) {
    tx.emit(task.tenantId, taskId, "task.log", {
      level: line.level,
      message: line.message,
      fields: line.fields,
      step_position: line.stepPosition,
    });
  }
  switch (r.kind) {
    case "succeeded":
      return setTaskStatus(tx, task, "succeeded", { output: r.output });
    case "failed":
      return setTaskStatus(tx, task, "failed", { error: r.error });
    case "retry":
      return tx.enqueue([advanceItem(task.tenantId, taskId, r.runAt)]);
    case "timed_out":
      return setTaskStatus(tx, task, "timed_out", { error: r.error });
    case "suspended":
      return setTaskStatus(tx, task, "waiting");
  }
}
