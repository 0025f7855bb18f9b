import type { TenantRow, TenantUsage } from "../store/store.ts";

const iso = (ms: number) => new Date(ms).toISOString();

export function tenantJson(t: TenantRow) {
  return {
    tenant_id: t.id,
    name: t.name,
    quotas: t.quotas,
    tokens_used: t.tokensUsed,
    created_at: iso(t.createdAt),
  };
}

export function usageJson(u: TenantUsage) {
  return {
    tenant_id: u.tenant.id,
    quotas: u.tenant.quotas,
    tasks: u.tasksByStatus,
    jobs_running: u.jobsRunning,
    tokens_used: u.tenant.tokensUsed,
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
