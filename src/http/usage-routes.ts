import type { TenantStore } from "../store/store.ts";
import { Usage, UsageQuery } from "../wire/tenants.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";
import { usageJson } from "./tenant-json.ts";

/** `GET /v1/usage?days=30`: the calling tenant's tasks by status, jobs, tokens by day, recent job failures. */
export function usageRoutes(app: Api, store: TenantStore): void {
  const schema = operation("The tenant's usage: tasks by status, jobs, tokens by day", {
    querystring: UsageQuery,
    response: { 200: Usage },
  });
  app.get("/v1/usage", { schema }, async (req) => {
    const u = await store.usage(req.tenant.id, req.query.days ?? 30);
    return usageJson(u!);
  });
}
