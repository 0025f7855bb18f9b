import type { FastifyInstance } from "fastify";
import type { Store } from "../store/store.ts";
import { days } from "./admin-tenants-routes.ts";
import { usageJson } from "./tenant-json.ts";

/** `GET /v1/usage?days=30`: the calling tenant's tasks by status, jobs, tokens by day, recent job failures. */
export function usageRoutes(app: FastifyInstance, store: Store): void {
  app.get<{ Querystring: { days?: string } }>("/v1/usage", async (req) => {
    const u = await store.usage(req.tenant.id, days(req.query.days));
    return usageJson(u!);
  });
}
