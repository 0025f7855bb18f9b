import type { Quotas } from "../core/quota.ts";
import { validateQuotas } from "../core/quota.ts";
import type { TenantRow, TenantStore } from "../store/store.ts";

/**
 * Renames a tenant or replaces its quotas; what is absent stays. Quotas are checked
 * (VALIDATION_FAILED naming the field) before anything is written; TENANT_NOT_FOUND from the store.
 */
export async function updateTenant(
  d: { tenants: TenantStore },
  u: { tenantId: string; name?: string | undefined; quotas?: unknown },
): Promise<TenantRow> {
  const patch: { name?: string; quotas?: Quotas } = {};
  if (u.name !== undefined) patch.name = u.name.trim();
  if (u.quotas !== undefined) patch.quotas = validateQuotas(u.quotas);
  return d.tenants.updateTenant(u.tenantId, patch);
}
