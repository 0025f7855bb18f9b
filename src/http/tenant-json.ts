import type { TenantRow, TenantUsage } from "../store/store.ts";

const iso = (ms: number) => new Date(ms).toISOString();

export function tenantJson(t: TenantRow) {
  return {
    tenant_id: t.id,
    name: t.name,
    quotas: t.quotas,
    tokens_used: t.tokensUsed,
    budget: budgetJson(t),
    created_at: iso(t.createdAt),
  };
}

/** The token budget's current period: what it counts, what running jobs hold, when it began. */
function budgetJson(t: TenantRow) {
  return {
    token_budget: t.quotas.token_budget ?? null,
    period: t.quotas.budget_period ?? "month",
    period_start: t.budgetPeriodStart,
    tokens_used: t.tokensThisPeriod,
    tokens_reserved: t.tokensReserved,
  };
}

export function usageJson(u: TenantUsage) {
  return {
    tenant_id: u.tenant.id,
    quotas: u.tenant.quotas,
    tasks: u.tasksByStatus,
    jobs_running: u.jobsRunning,
    tokens_used: u.tenant.tokensUsed,
    budget: budgetJson(u.tenant),
    days: u.daily,
    recent_job_failures: u.recentJobFailures.map((f) => ({
      job_id: f.externalId,
      provider: f.provider,
      task_id: f.taskId,
      step_id: f.stepId,
      error: f.error,
      at: iso(f.at),
    })),
  };
}
