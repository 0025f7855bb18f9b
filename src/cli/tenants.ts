import { tenantJson } from "../http/tenant-json.ts";
import { addApiKey, createTenant } from "../usecases/create-tenant.ts";
import { databaseUrl, openExistingStore, openMigratedStore } from "./store.ts";

// `longhaul tenants …`: on the store of --database-url (LONGHAUL_DATABASE_URL), like `migrate`.
// `list` only reads; the others migrate the store first, as a server's start does.

interface StoreOptions {
  databaseUrl?: string;
}

interface CreateOptions extends StoreOptions {
  maxConcurrentJobs?: number;
  tasksPerDay?: number;
  tokenBudget?: number;
  budgetPolicy?: string;
  budgetPeriod?: string;
  submitRate?: number;
}

export async function tenantsCreate(name: string, o: CreateOptions): Promise<void> {
  const quotas = Object.fromEntries(
    Object.entries({
      max_concurrent_jobs: o.maxConcurrentJobs,
      tasks_per_day: o.tasksPerDay,
      token_budget: o.tokenBudget,
      budget_policy: o.budgetPolicy,
      budget_period: o.budgetPeriod,
      submit_rate_per_s: o.submitRate,
    }).filter(([, v]) => v !== undefined),
  );
  const store = await openMigratedStore(databaseUrl(o.databaseUrl));
  try {
    const { tenant: t, apiKey } = await createTenant({ tenants: store }, { name, quotas });
    console.log(
      `tenant ${t.id} (${t.name})\napi key: ${apiKey}\n(the key is shown once; it is stored only as a hash)`,
    );
  } finally {
    await store.close();
  }
}

/** Every tenant; `--json` prints them as the admin API does (`GET /v1/admin/tenants`). */
export async function tenantsList(o: StoreOptions & { json?: boolean }): Promise<void> {
  const store = await openExistingStore(databaseUrl(o.databaseUrl), { migrated: true });
  try {
    const tenants = await store.listTenants();
    if (o.json) {
      console.log(JSON.stringify({ data: tenants.map(tenantJson) }, null, 2));
      return;
    }
    for (const t of tenants) {
      console.log(`${t.id}\t${t.name}\ttokens used ${t.tokensUsed}\tquotas ${JSON.stringify(t.quotas)}`);
    }
  } finally {
    await store.close();
  }
}

export async function tenantsRotateKey(id: string, o: StoreOptions): Promise<void> {
  const store = await openMigratedStore(databaseUrl(o.databaseUrl));
  try {
    const { keyId, apiKey } = await addApiKey({ tenants: store }, { tenantId: id });
    console.log(
      `new key ${keyId} for ${id}\napi key: ${apiKey}\nrevoke the old one with: longhaul tenants revoke-key ${id} <key id>`,
    );
  } finally {
    await store.close();
  }
}

export async function tenantsRevokeKey(id: string, keyId: string, o: StoreOptions): Promise<void> {
  const store = await openMigratedStore(databaseUrl(o.databaseUrl));
  try {
    await store.revokeApiKey(id, keyId);
    console.log(`revoked ${keyId}`);
  } finally {
    await store.close();
  }
}
