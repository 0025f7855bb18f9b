import { liveJobStatuses } from "../../core/job.ts";
import { PARK_MS } from "../../core/work-item.ts";
import { inStates } from "../sql/states.ts";
import type { Tx } from "../sql/tx.ts";
import type { Lease, ProviderBudget } from "../store.ts";
import { park } from "./queue-ops.ts";

/*
 * Provider admission (ARCHITECTURE §4.8): a provider's enqueued-token budget per model. What a
 * provider holds is never counted apart: it is the sum of the declared max tokens of the live
 * jobs admitted under that provider and model, so a job that ends (succeeded, failed, canceled,
 * timed out) frees its share in the same commit, and a restart or a crash cannot leak any.
 */

const live = inStates("status", liveJobStatuses);

const admissionSql = {
  held: (tx: Tx) => `SELECT CAST(coalesce(sum(max_tokens), 0) AS bigint) AS n FROM jobs
      WHERE provider = ? AND model = ? AND ${live} AND slot = ${tx.d.true} AND id <> ?`,
  awaiting: (tx: Tx) => `SELECT 'dispatch:' || id FROM jobs
      WHERE model IS NOT NULL AND ${live} AND status = 'pending' AND slot = ${tx.d.false}`,
};

/** Takes the lock of one provider's budget for one model, held to the end of the transaction. */
const lockBudget = (tx: Tx, provider: string, model: string) => tx.lock(`enqueued:${provider}:${model}`);

/**
 * Whether a job declaring `maxTokens` fits in its provider's budget for its model beside the
 * jobs admitted there. Locks the budget first, so two workers admitting at once (on two nodes)
 * never both take its last room: the second reads after the first has committed. A job that
 * declares nothing holds nothing and always fits; one larger than the whole budget is admitted
 * when no other job holds any, since nothing would ever make more room for it.
 */
export async function fitsProviderBudget(
  tx: Tx,
  jobId: string,
  provider: string,
  budget: ProviderBudget,
  maxTokens: number,
): Promise<boolean> {
  if (maxTokens <= 0) return true;
  await lockBudget(tx, provider, budget.model);
  const held = Number(
    (await tx.get<{ n: number }>(admissionSql.held(tx), [provider, budget.model, jobId]))!.n,
  );
  return held === 0 || held + maxTokens <= budget.maxTokens;
}

/**
 * Parks a job's dispatch until its provider has room: the item waits as parked (no attempt
 * counted), and the job keeps its model so `wakeAwaitingRoom` finds it. Emits `job.parked` with
 * the reason the first time only (a re-check that still finds no room says nothing new).
 */
export async function parkForRoom(
  tx: Tx,
  lease: Lease,
  job: {
    id: string;
    tenant_id: string;
    task_id: string;
    step_id: string;
    provider: string;
    model: string | null;
  },
  budget: ProviderBudget,
): Promise<void> {
  await park(tx, lease, tx.clock.now() + PARK_MS);
  if (job.model === budget.model) return;
  await tx.run("UPDATE jobs SET model = ? WHERE id = ?", [budget.model, job.id]);
  tx.emit(job.tenant_id, job.task_id, "job.parked", {
    step_id: job.step_id,
    job_id: job.id,
    provider: job.provider,
    model: budget.model,
    reason: `waiting for room in ${job.provider}'s enqueued-token budget for ${budget.model} (${budget.maxTokens} tokens)`,
  });
}

/**
 * A job has ended, so a provider budget may have room: makes due now the parked dispatches of
 * every job waiting for room (each re-checks its own budget). Wakes the workers if any.
 */
export async function wakeAwaitingRoom(tx: Tx): Promise<void> {
  const woken = await tx.run(
    `UPDATE work_items SET parked = ${tx.d.false}, run_at = ?
      WHERE parked = ${tx.d.true} AND status = 'pending' AND dedupe_key IN (${admissionSql.awaiting(tx)})`,
    [tx.clock.now()],
  );
  if (woken > 0) tx.wake();
}
