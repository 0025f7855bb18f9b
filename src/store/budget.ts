import { overBudget } from "../core/quotas.ts";
import type { TenantRow } from "./store.ts";

/**
 * The token budget's say on admitting a job (ARCHITECTURE §4.6), from the tenant as read in
 * the admitting transaction. `rejected`: the period's budget is spent and the policy is
 * `reject`. `parked`: it is spent under `park`, or the job's `maxTokens` does not fit beside
 * what the period has used and the running jobs hold; a job that ends frees its hold and
 * wakes the parked work, and a new period resets the usage. `ok` with `reserve`: the tokens
 * to hold for the job until its usage is counted (none without a budget or a declared max).
 *
 * A job whose declared max alone is larger than what is left, with no other job holding
 * tokens, is admitted: nothing would ever free room for it, and the budget still stops new
 * work once its usage is counted.
 */
export function admitTokens(
  t: TenantRow,
  maxTokens: number | null,
): { verdict: "ok"; reserve: number } | { verdict: "parked" | "rejected" } {
  const q = t.quotas;
  if (q.token_budget == null) return { verdict: "ok", reserve: 0 };
  if (overBudget(q, t.tokensThisPeriod)) {
    return { verdict: q.budget_policy === "reject" ? "rejected" : "parked" };
  }
  const reserve = maxTokens ?? 0;
  if (
    reserve > 0 &&
    t.tokensReserved > 0 &&
    t.tokensThisPeriod + t.tokensReserved + reserve > q.token_budget
  ) {
    return { verdict: "parked" };
  }
  return { verdict: "ok", reserve };
}
