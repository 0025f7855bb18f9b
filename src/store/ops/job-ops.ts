import type { ErrorInfo } from "../../core/errors.ts";
import {
  isTerminalJob,
  type JobStatus,
  jobEndCounts,
  jobEventEffect,
  jobMove,
  statusOnCreated,
} from "../../core/job.ts";
import type { ProviderEvent } from "../../core/provider-event.ts";
import { admissionLocks, admitJob, countsSlots } from "../../core/quota.ts";
import { applyItem, PARK_MS, pollItem } from "../../core/work-item.ts";
import { json } from "../json.ts";
import { type DbFlag, type JobDbRow, toJob } from "../rows.ts";
import type { Tx } from "../sql/tx.ts";
import type {
  ApplyOutcome,
  InboxStatus,
  JobRow,
  Lease,
  NewInboxEvent,
  ProviderBudget,
  TaskRow,
} from "../store.ts";
import { fitsProviderBudget, parkForRoom, wakeAwaitingRoom } from "./admission-ops.ts";
import { markInbox, recordEvent } from "./inbox-ops.ts";
import { assertLease, deferUncounted, park, removeItem } from "./queue-ops.ts";
import { lockTask } from "./task-ops.ts";
import { countUsage, lockSlots, slotsInUse, tenant, wakeParked } from "./tenant-ops.ts";
import { endWait } from "./wait-ops.ts";

/*
 * Jobs at their providers: admitting one under its tenant's quotas, recording its creation,
 * applying the events that move it, the reconciler's polls, and its end, which ends its step
 * (ARCHITECTURE §3.2, §3.5, §4.3, §4.6). Every write starts by asserting its lease, and locks
 * in one order: the job key, the inbox row, the task, the job.
 */

/** One job. No locks. */
export async function getJob(tx: Tx, jobId: string): Promise<JobRow | null> {
  const r = await tx.get<JobDbRow>("SELECT * FROM jobs WHERE id = ?", [jobId]);
  return r ? toJob(r) : null;
}

/**
 * Admits a job under its tenant's quotas before it is created at the provider, as core's
 * `admitJob` decides from the tenant read under its slot lock. `ok`: go on (the job now
 * holds a slot). `parked`: the dispatch item waits, woken when a slot frees. `rejected`: the
 * tenant's token budget of this period is spent, with the `reject` policy. Under a token
 * budget the job reserves its declared max tokens (see `admitTokens`). With `budget`, the job
 * must then fit in its provider's enqueued-token budget for the model (`fitsProviderBudget`),
 * or it is parked until a job there ends (ARCHITECTURE §4.8).
 * Locks: the tenant's `job_slots` key when it has a quota, so two admissions never both take
 * its last free slot or both fit in the budget's last tokens; then the provider budget's key.
 * Emits `job.parked` when the job first waits for room at its provider.
 */
export async function acquireJobSlot(
  tx: Tx,
  lease: Lease,
  jobId: string,
  budget?: ProviderBudget,
): Promise<"ok" | "parked" | "rejected"> {
  await assertLease(tx, lease);
  const known = await tx.get<{
    id: string;
    tenant_id: string;
    task_id: string;
    step_id: string;
    provider: string;
    model: string | null;
    slot: DbFlag;
    max_tokens: number | null;
  }>("SELECT id, tenant_id, task_id, step_id, provider, model, slot, max_tokens FROM jobs WHERE id = ?", [
    jobId,
  ]);
  if (!known || known.slot) return "ok";
  let t = await tenant(tx, known.tenant_id);
  if (t && admissionLocks(t.quotas)) {
    await lockSlots(tx, known.tenant_id);
    // Read again under the lock: another admission may just have taken a slot or reserved tokens.
    t = await tenant(tx, known.tenant_id);
  }
  // The slots in use only ever make the verdict worse: counted only when they can decide it.
  const counted = t !== null && countsSlots(t.quotas) && admitJob(t, known.max_tokens, 0).verdict === "ok";
  const admitted = admitJob(t, known.max_tokens, counted ? await slotsInUse(tx, known.tenant_id) : 0);
  if (admitted.verdict !== "ok") {
    if (admitted.verdict === "parked") await park(tx, lease, tx.clock.now() + PARK_MS);
    return admitted.verdict;
  }
  const maxTokens = Number(known.max_tokens ?? 0);
  if (budget && !(await fitsProviderBudget(tx, jobId, known.provider, budget, maxTokens))) {
    await parkForRoom(tx, lease, known, budget);
    return "parked";
  }
  await tx.run(`UPDATE jobs SET slot = ${tx.d.true}, reserved_tokens = ?, model = ? WHERE id = ?`, [
    admitted.reserve,
    budget?.model ?? null,
    jobId,
  ]);
  return "ok";
}

/**
 * The provider rate-limited the job's creation (ARCHITECTURE §4.8): the item waits until
 * `retryAt` counting no attempt (and not parked: a freed slot must not wake it before the
 * provider's `Retry-After`), and the job counts one more throttle. No locks beyond the lease.
 * Emits `job.throttled` with the reason and `retry_at`, which the task's timeline shows.
 */
export async function throttleJob(
  tx: Tx,
  lease: Lease,
  jobId: string,
  reason: string,
  retryAt: number,
): Promise<void> {
  await assertLease(tx, lease);
  await deferUncounted(tx, lease, retryAt, reason);
  const j = await tx.get<{
    tenant_id: string;
    task_id: string;
    step_id: string;
    provider: string;
    throttles: number;
  }>("SELECT tenant_id, task_id, step_id, provider, throttles FROM jobs WHERE id = ?", [jobId]);
  if (!j) return;
  await tx.run("UPDATE jobs SET throttles = throttles + 1, updated_at = ? WHERE id = ?", [
    tx.clock.now(),
    jobId,
  ]);
  tx.emit(j.tenant_id, j.task_id, "job.throttled", {
    step_id: j.step_id,
    job_id: jobId,
    provider: j.provider,
    throttles: Number(j.throttles) + 1,
    last_error: reason,
    retry_at: new Date(retryAt).toISOString(),
  });
}

const jobRow = (tx: Tx, jobId: string, lock = false) =>
  tx.get<JobDbRow>(`SELECT * FROM jobs WHERE id = ?${lock ? tx.d.forUpdate : ""}`, [jobId]);

/**
 * The lock that pairs an early event with its job's creation (ARCHITECTURE §3.5). Both
 * `applyJobEvent` (which may find no job and park the event as unmatched) and
 * `recordJobCreated` (which looks for parked events) take it before they read, so one of
 * them always runs after the other has committed and sees what it wrote: the event cannot be
 * parked after the creation already looked for it.
 */
const jobKeyLock = (tx: Tx, provider: string, externalId: string) => tx.lock(`job:${provider}:${externalId}`);

/**
 * Records the provider's id of a created job. Locks: the job key, the job. Emits
 * `job.created`. Enqueues the job's first reconciler poll and the events that came before
 * the job was known (ARCHITECTURE §3.5).
 */
export async function recordJobCreated(
  tx: Tx,
  lease: Lease,
  jobId: string,
  externalId: string,
  status: JobStatus,
): Promise<void> {
  await assertLease(tx, lease);
  await removeItem(tx, lease);
  const known = await jobRow(tx, jobId);
  if (!known || known.external_id !== null) return;
  await jobKeyLock(tx, known.provider, externalId);
  const j = (await jobRow(tx, jobId, true))!;
  if (j.external_id !== null) return;
  const now = tx.clock.now();
  // Read under the job's lock above, so the status decided from it is still the job's.
  await tx.run("UPDATE jobs SET external_id = ?, status = ?, updated_at = ? WHERE id = ?", [
    externalId,
    statusOnCreated(j.status, status),
    now,
    jobId,
  ]);
  tx.emit(j.tenant_id, j.task_id, "job.created", {
    step_id: j.step_id,
    job_id: jobId,
    provider: j.provider,
    external_id: externalId,
  });
  await countUsage(tx, j.tenant_id, { jobs_created: 1 });
  const items = [];
  if (j.poll_after_ms != null) items.push(pollItem(j.tenant_id, jobId, now + j.poll_after_ms, 1));
  const early = await tx.all<{ id: string }>(
    `SELECT id FROM inbox_events WHERE provider = ? AND job_external_id = ? AND status = 'unmatched'
      ORDER BY received_at, id`,
    [j.provider, externalId],
  );
  if (early.length > 0) {
    await tx.run(
      `UPDATE inbox_events SET status = 'received', updated_at = ?
        WHERE provider = ? AND job_external_id = ? AND status = 'unmatched'`,
      [now, j.provider, externalId],
    );
  }
  for (const e of early) items.push(applyItem(j.tenant_id, e.id));
  await tx.enqueue(items);
}

/**
 * Ends a job's step with `stepStatus`, stores the job's final fields, frees its slot and
 * advances its task. The caller holds the task's lock. Emits `step.<status>`; deletes the
 * job's pending poll; enqueues the task's advance; wakes the tenant's parked work.
 */
async function endJobStep(
  tx: Tx,
  task: TaskRow,
  j: JobDbRow,
  jobStatus: JobStatus,
  stepStatus: "succeeded" | "failed" | "timed_out",
  fields: { output?: unknown; error?: ErrorInfo | null; usage?: unknown },
): Promise<void> {
  await tx.run(
    `UPDATE jobs SET status = ?, output = COALESCE(?, output), error = COALESCE(?, error),
       usage = COALESCE(?, usage), reserved_tokens = 0, updated_at = ? WHERE id = ?`,
    [
      jobMove(j.status, jobStatus),
      fields.output === undefined ? null : json(fields.output),
      fields.error ? json(fields.error) : null,
      fields.usage === undefined ? null : json(fields.usage),
      tx.clock.now(),
      j.id,
    ],
  );
  // The job has ended: its reconciler poll has nothing left to ask, and its slot is free.
  await tx.run("DELETE FROM work_items WHERE dedupe_key = ? AND status = 'pending'", [`poll:${j.id}`]);
  await countUsage(tx, j.tenant_id, jobEndCounts(jobStatus, fields.usage));
  await wakeParked(tx, j.tenant_id);
  if (j.model !== null) await wakeAwaitingRoom(tx);
  await endWait(tx, task, j.step_id, stepStatus, {
    ...(stepStatus === "succeeded" ? { output: fields.output } : {}),
    ...(fields.error ? { error: fields.error } : {}),
  });
}

/** Locks the task of a job, then reads the job afresh (see `lockTask` for the order). */
async function lockJobAndTask(tx: Tx, taskId: string, jobId: string) {
  // A job's task always exists: jobs.task_id references tasks, and tasks are never deleted.
  const task = (await lockTask(tx, taskId))!;
  const job = (await jobRow(tx, jobId, true))!;
  return { task, job };
}

/** Ends a job that could not be created or ran out of attempts. Locks: the task, the job. */
export async function failJob(tx: Tx, lease: Lease, jobId: string, error: ErrorInfo): Promise<void> {
  await assertLease(tx, lease);
  await removeItem(tx, lease);
  const known = await jobRow(tx, jobId);
  if (!known) return;
  const { task, job } = await lockJobAndTask(tx, known.task_id, jobId);
  if (isTerminalJob(job.status)) return;
  await endJobStep(tx, task, job, "failed", "failed", { error });
}

/**
 * Records what a reconciler poll found: the event it read (into the inbox, as a webhook
 * would be) and the next poll. Locks: the job, shared (a job that ends meanwhile deletes its
 * pending poll after this commits, or is seen ended here; either way no poll is left behind).
 */
export async function recordPoll(
  tx: Tx,
  lease: Lease,
  jobId: string,
  event: NewInboxEvent | null,
  next: { runAt: number; attempt: number } | null,
): Promise<void> {
  await assertLease(tx, lease);
  await removeItem(tx, lease);
  if (event) await recordEvent(tx, event);
  const j = await tx.get<{ tenant_id: string; status: JobStatus }>(
    `SELECT tenant_id, status FROM jobs WHERE id = ?${tx.d.forShare}`,
    [jobId],
  );
  if (next && j && !isTerminalJob(j.status)) {
    await tx.enqueue([pollItem(j.tenant_id, jobId, next.runAt, next.attempt)]);
  }
}

/**
 * Applies a provider event once (ARCHITECTURE §3.2). Locks, in order: the job key (pairs with
 * `recordJobCreated`), the inbox row (a replayed twin of this item waits, then sees the event
 * applied), the task, the job. Emits `job.<status>` or, when the job ends, `step.<status>`.
 * An event for a job not yet known is kept as unmatched (ARCHITECTURE §3.5).
 */
export async function applyJobEvent(
  tx: Tx,
  lease: Lease,
  inboxId: string,
  provider: string,
  ev: ProviderEvent,
): Promise<ApplyOutcome> {
  await assertLease(tx, lease);
  await removeItem(tx, lease);
  await jobKeyLock(tx, provider, ev.jobId);
  const inbox = await tx.get<{ status: InboxStatus }>(
    `SELECT status FROM inbox_events WHERE id = ?${tx.d.forUpdate}`,
    [inboxId],
  );
  if (!inbox || (inbox.status !== "received" && inbox.status !== "unmatched")) return "ignored";
  const found = await tx.get<{ id: string; task_id: string }>(
    "SELECT id, task_id FROM jobs WHERE provider = ? AND external_id = ?",
    [provider, ev.jobId],
  );
  if (!found) {
    await markInbox(tx, inboxId, "unmatched", {
      type: ev.type,
      jobExternalId: ev.jobId,
      note: "no job with this id yet",
    });
    return "unmatched";
  }
  const { task, job: j } = await lockJobAndTask(tx, found.task_id, found.id);
  const effect = jobEventEffect(j.status, provider, ev, tx.clock.now());
  const seen = { type: ev.type, jobExternalId: ev.jobId };
  switch (effect.kind) {
    case "late":
      await tx.run("UPDATE steps SET late_output = ? WHERE task_id = ? AND step_id = ?", [
        json(effect.lateOutput),
        j.task_id,
        j.step_id,
      ]);
      await markInbox(tx, inboxId, "ignored", { ...seen, note: effect.note });
      return "ignored";
    case "ignored":
      await markInbox(tx, inboxId, "ignored", { ...seen, note: effect.note });
      return "ignored";
    case "end":
      await markInbox(tx, inboxId, "applied", seen);
      await endJobStep(tx, task, j, effect.jobStatus, effect.stepStatus, effect.fields);
      return "applied";
    case "move":
      await markInbox(tx, inboxId, "applied", seen);
      await tx.run("UPDATE jobs SET status = ?, updated_at = ? WHERE id = ?", [
        jobMove(j.status, effect.to),
        tx.clock.now(),
        j.id,
      ]);
      tx.emit(j.tenant_id, j.task_id, `job.${effect.to}`, { step_id: j.step_id, job_id: j.id });
      return "applied";
  }
}
