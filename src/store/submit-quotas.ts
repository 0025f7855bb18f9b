import { LonghaulError } from "../core/errors.ts";
import { overBudget, secondsUntilNextDay } from "../core/quotas.ts";
import type { TenantRow } from "./store.ts";

/**
 * ARCHITECTURE §4.6: the daily task limit, and the token budget under the `reject` policy.
 * `submittedToday`: the tenant's tasks submitted today before this one. QUOTA_EXCEEDED,
 * BUDGET_EXCEEDED.
 */
export function checkSubmitQuotas(t: TenantRow, submittedToday: number, now: number): void {
  const q = t.quotas;
  if (q.tasks_per_day != null && submittedToday >= q.tasks_per_day) {
    const retryAfter = secondsUntilNextDay(now);
    throw new LonghaulError(
      "QUOTA_EXCEEDED",
      `This tenant may submit ${q.tasks_per_day} tasks a day and has reached it; try again in ${retryAfter} s (the limit resets at midnight UTC).`,
      { details: { retry_after_s: retryAfter } },
    );
  }
  if (q.budget_policy === "reject" && overBudget(q, t.tokensUsed)) {
    throw new LonghaulError(
      "BUDGET_EXCEEDED",
      `This tenant has used ${t.tokensUsed} of its ${q.token_budget} tokens; ask an admin to raise token_budget.`,
    );
  }
}
