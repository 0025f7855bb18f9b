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

/** API keys whose tenant is remembered; the least recently used is forgotten past this. */
const CACHED_KEYS = 10_000;

/**
 * Resolves `Authorization: Bearer <key>` to its tenant. Found keys are cached for a few
 * seconds so the hot path costs a hash and a map read, not a query; the seconds are the
 * injected clock's, so a revoked key stops working on the same clock as everything else.
 * Only found keys are cached, least recently used out first: made-up keys (rate limited per
 * address) cannot push real ones out, and a key created after a miss works at once.
 */
export function tenantAuth(store: TenantStore, clock: Clock, ttlMs = 5000, maxKeys = CACHED_KEYS) {
  // A Map iterates in insertion order: re-inserting on each hit keeps the oldest use first.
  const cache = new Map<string, { tenant: TenantRow; until: number }>();
  return async (req: FastifyRequest): Promise<void> => {
    const h = req.headers.authorization;
    const key = h?.startsWith("Bearer ") ? h.slice(7).trim() : "";
    if (!key) {
      throw new LonghaulError("UNAUTHORIZED", "Send your API key as `Authorization: Bearer <key>`.");
    }
    const hash = hashApiKey(key);
    const now = clock.now();
    let hit = cache.get(hash);
    cache.delete(hash);
    if (!hit || hit.until < now) {
      const tenant = await store.tenantByKeyHash(hash);
      if (!tenant)
        throw new LonghaulError("UNAUTHORIZED", "This API key is not valid; check it or create a new one.");
      hit = { tenant, until: now + ttlMs };
    }
    cache.set(hash, hit);
    if (cache.size > maxKeys) cache.delete(cache.keys().next().value as string);
    req.tenant = hit.tenant;
  };
}
