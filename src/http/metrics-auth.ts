import type { FastifyRequest } from "fastify";
import { LonghaulError } from "../core/errors.ts";
import { adminAuth } from "./admin-auth.ts";

/**
 * `/metrics` on the API address wants the admin key: metrics name task types, tenants' load
 * and process details. Without an admin key it stays closed and says how to open it.
 */
export function metricsAuth(adminKey: string | undefined) {
  if (!adminKey) {
    return async (_req: FastifyRequest): Promise<void> => {
      throw new LonghaulError(
        "UNAUTHORIZED",
        "/metrics is off: set LONGHAUL_ADMIN_KEY and send it as `Authorization: Bearer <key>`, serve metrics on an address of their own with metrics.listen, or set metrics.public to true.",
      );
    };
  }
  return adminAuth(adminKey);
}
