import { artifactStepId } from "../../core/artifact.ts";
import { LonghaulError } from "../../core/errors.ts";
import { checkRerunnable, reusedSteps } from "../../core/rerun.ts";
import type { StoredStep } from "../../core/step.ts";
import { type ArtifactDbRow, type StepDbRow, toStep } from "../rows.ts";
import type { Tx } from "../sql/tx.ts";
import type { NewRerun, TaskRow } from "../store.ts";
import { submitTask, taskRow } from "./task-ops.ts";

/*
 * Re-runs (ARCHITECTURE §4.4): a task that has ended never moves again (§3.3), so a re-run is
 * a new task that names the old one, with the old one's reused steps copied as its history.
 */

/**
 * Copies a reused step as the new task's memo: its outcome, attempts and settings. Not its job
 * (the job row stays the old task's; the outcome is all replay reads, so nothing is dispatched
 * again), its deadline or a late answer (it has ended).
 */
const copyStepsSql = `INSERT INTO steps (task_id, step_id, position, kind, status, output, error, attempts, config,
      handed_off, result_sha256, created_at, updated_at)
    SELECT ?, step_id, position, kind, status, output, error, attempts, config, handed_off, result_sha256, ?, ?
    FROM steps WHERE task_id = ? AND position < ?`;

/**
 * Submits a re-run of `r.taskId` (core's `checkRerunnable`, `reusedSteps`). The new task is
 * submitted as any other (quotas, client_request_id, `task.created` with `rerun_of`, its first
 * advance), then in the same transaction the reused steps are copied, and the artifacts those
 * steps stored: a copy of the row names the same bytes, which are never copied. Locks: those of
 * a submit; the old task has ended, so nothing moves it meanwhile. TASK_NOT_FOUND for another
 * tenant's task.
 */
export async function rerunTask(
  tx: Tx,
  r: NewRerun,
): Promise<{ task: TaskRow; created: boolean; reusedSteps: number }> {
  const old = await taskRow(tx, r.taskId);
  if (!old || old.tenantId !== r.tenantId)
    throw new LonghaulError("TASK_NOT_FOUND", `No task ${r.taskId} for this tenant.`);
  checkRerunnable(old);
  const steps = (
    await tx.all<StepDbRow>("SELECT * FROM steps WHERE task_id = ? ORDER BY position", [old.id])
  ).map(toStep);
  const reused = reusedSteps(steps, r.from);
  const { task, created } = await submitTask(tx, {
    tenantId: old.tenantId,
    type: old.type,
    // A value kept in the blob store is its reference here: the reference is copied, not the bytes.
    input: old.input,
    clientRequestId: r.clientRequestId,
    userId: old.userId,
    traceId: old.traceId,
    rerunOf: old.id,
  });
  // The re-run this client_request_id made first: its steps were copied then, maybe from another point.
  if (!created) {
    const first = await tx.get<{ n: number | null }>(
      "SELECT rerun_reused_steps AS n FROM tasks WHERE id = ?",
      [task.id],
    );
    return { task, created, reusedSteps: Number(first?.n ?? 0) };
  }
  await tx.run("UPDATE tasks SET rerun_reused_steps = ? WHERE id = ?", [reused.length, task.id]);
  if (reused.length > 0) await copyReused(tx, old.id, task.id, reused);
  tx.emit(task.tenantId, task.id, "task.rerun", {
    rerun_of: old.id,
    from: r.from,
    reused_steps: reused.length,
  });
  return { task, created, reusedSteps: reused.length };
}

/** Copies the reused steps (positions 0 to n - 1) and the artifacts those steps stored. */
async function copyReused(
  tx: Tx,
  oldId: string,
  newId: string,
  reused: readonly StoredStep[],
): Promise<void> {
  const now = tx.clock.now();
  await tx.run(copyStepsSql, [newId, now, now, oldId, reused.length]);
  const reusedIds = new Set(reused.map((s) => s.stepId));
  const artifacts = await tx.all<ArtifactDbRow>("SELECT * FROM artifacts WHERE task_id = ? ORDER BY name", [
    oldId,
  ]);
  for (const a of artifacts) {
    if (!reusedIds.has(artifactStepId(a.name))) continue;
    await tx.run(
      `INSERT INTO artifacts (task_id, tenant_id, name, content_type, size, sha256, blob_key, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [newId, a.tenant_id, a.name, a.content_type, a.size, a.sha256, a.blob_key, a.created_at],
    );
  }
}

/** Which of `taskIds` (the tenant's) some task re-runs. No locks. */
export async function rerunTaskIds(
  tx: Tx,
  tenantId: string,
  taskIds: readonly string[],
): Promise<Set<string>> {
  if (taskIds.length === 0) return new Set();
  const rows = await tx.all<{ rerun_of: string }>(
    `SELECT DISTINCT rerun_of FROM tasks WHERE tenant_id = ? AND rerun_of IN (${taskIds.map(() => "?").join(", ")})`,
    [tenantId, ...taskIds],
  );
  return new Set(rows.map((x) => x.rerun_of));
}
