import { parseArgs } from "node:util";
import { LonghaulError } from "../core/errors.ts";
import { openStore } from "../store/open-store.ts";
import type { Store } from "../store/store.ts";
import { addApiKey, createTenant } from "../usecases/create-tenant.ts";

const usage = `longhaul tenants create NAME [--max-concurrent-jobs n] [--tasks-per-day n] [--token-budget n]
                        [--budget-policy park|reject] [--budget-period day|month] [--submit-rate n]
longhaul tenants list
longhaul tenants rotate-key TENANT_ID      adds a new key; the old one works until revoked
longhaul tenants revoke-key TENANT_ID KEY_ID`;

const int = (v: string | undefined) => (v === undefined ? undefined : Number(v));

/** `longhaul tenants …`: works on the store named by LONGHAUL_DATABASE_URL, like `migrate`. */
export async function tenantsCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      "max-concurrent-jobs": { type: "string" },
      "tasks-per-day": { type: "string" },
      "token-budget": { type: "string" },
      "budget-policy": { type: "string" },
      "budget-period": { type: "string" },
      "submit-rate": { type: "string" },
    },
  });
  const [sub, ...args] = positionals;
  const store = await openStore(process.env.LONGHAUL_DATABASE_URL ?? "sqlite:.longhaul/longhaul.db");
  try {
    await store.migrate();
    await run(store, sub, args, values);
  } finally {
    await store.close();
  }
}

async function run(
  store: Store,
  sub: string | undefined,
  args: string[],
  values: Record<string, string | undefined>,
) {
  switch (sub) {
    case "create": {
      const name = args[0];
      if (!name) throw new LonghaulError("VALIDATION_FAILED", `Name the tenant.\n${usage}`);
      const quotas = Object.fromEntries(
        Object.entries({
          max_concurrent_jobs: int(values["max-concurrent-jobs"]),
          tasks_per_day: int(values["tasks-per-day"]),
          token_budget: int(values["token-budget"]),
          budget_policy: values["budget-policy"],
          budget_period: values["budget-period"],
          submit_rate_per_s: int(values["submit-rate"]),
        }).filter(([, v]) => v !== undefined),
      );
      const { tenant: t, apiKey } = await createTenant({ tenants: store }, { name, quotas });
      console.log(
        `tenant ${t.id} (${t.name})\napi key: ${apiKey}\n(the key is shown once; it is stored only as a hash)`,
      );
      return;
    }
    case "list":
      for (const t of await store.listTenants()) {
        console.log(`${t.id}\t${t.name}\ttokens used ${t.tokensUsed}\tquotas ${JSON.stringify(t.quotas)}`);
      }
      return;
    case "rotate-key": {
      const id = args[0];
      if (!id) throw new LonghaulError("VALIDATION_FAILED", `Name the tenant id.\n${usage}`);
      const { keyId, apiKey } = await addApiKey({ tenants: store }, { tenantId: id });
      console.log(
        `new key ${keyId} for ${id}\napi key: ${apiKey}\nrevoke the old one with: longhaul tenants revoke-key ${id} <key id>`,
      );
      return;
    }
    case "revoke-key": {
      const [id, keyId] = args;
      if (!id || !keyId)
        throw new LonghaulError("VALIDATION_FAILED", `Name the tenant id and the key id.\n${usage}`);
      await store.revokeApiKey(id, keyId);
      console.log(`revoked ${keyId}`);
      return;
    }
    default:
      console.log(usage);
  }
}
