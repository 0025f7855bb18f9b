import type { FastifyRequest } from "fastify";
import { hashApiKey } from "../core/api-keys.ts";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { TenantRow, TenantStore } from "../store/store.ts";

declare module "fastify" {
  interface FastifyRequest {
    tenant: TenantRow;
  }
}

/**
 * Resolves `Authorization: Bearer <key>` to its tenant. Lookups are cached for a few seconds
 * so the hot path costs a hash and a map read, not a query; the seconds are the injected
 * clock's, so a revoked key stops working on the same clock as everything else.
 */
export function tenantAuth(store: TenantStore, clock: Clock, ttlMs = 5000) {
  const cache = new Map<string, { tenant: TenantRow | null; until: number }>();
  return async (req: FastifyRequest): Promise<void> => {
    const h = req.headers.authorization;
    const key = h?.startsWith("Bearer ") ? h.slice(7).trim() : "";
    if (!key) {
      throw new LonghaulError("UNAUTHORIZED", "Send your API key as `Authorization: Bearer <key>`.");
    }
    const hash = hashApiKey(key);
    const now = clock.now();
    let hit = cache.get(hash);
    if (!hit || hit.until < now) {
      if (cache.size > 10_000) cache.clear();
      hit = { tenant: await store.tenantByKeyHash(hash), until: now + ttlMs };
      cache.set(hash, hit);
    }
    if (!hit.tenant)
      throw new LonghaulError("UNAUTHORIZED", "This API key is not valid; check it or create a new one.");
    req.tenant = hit.tenant;
  };
}
