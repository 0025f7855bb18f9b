import { hashApiKey, keyHint, newApiKey } from "../core/api-keys.ts";
import { LonghaulError } from "../core/errors.ts";
import { validateQuotas } from "../core/quota.ts";
import type { TenantRow, TenantStore } from "../store/store.ts";

/**
 * Creates a tenant with its first API key. The key is returned once and stored only as a hash;
 * quotas are checked here (VALIDATION_FAILED naming the field) before anything is written.
 */
export async function createTenant(
  d: { tenants: TenantStore },
  c: { name: string; quotas?: unknown },
): Promise<{ tenant: TenantRow; apiKey: string }> {
  const name = c.name.trim();
  if (name.length === 0) throw new LonghaulError("VALIDATION_FAILED", "Name the tenant: name is empty.");
  const quotas = validateQuotas(c.quotas);
  const apiKey = newApiKey();
  const tenant = await d.tenants.createTenant({
    name,
    keyHash: hashApiKey(apiKey),
    keyHint: keyHint(apiKey),
    quotas,
  });
  return { tenant, apiKey };
}

/** Adds an API key to a tenant (rotation): the old keys keep working until revoked. The key is returned once. */
export async function addApiKey(
  d: { tenants: TenantStore },
  a: { tenantId: string },
): Promise<{ keyId: string; apiKey: string }> {
  const apiKey = newApiKey();
  const keyId = await d.tenants.addApiKey(a.tenantId, hashApiKey(apiKey), keyHint(apiKey));
  return { keyId, apiKey };
}
