import { createHash, randomBytes } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { LonghaulError } from "../core/errors.ts";
import type { Store, TenantRow } from "../store/store.ts";

/** A new API key: shown once, stored only as its hash. */
export function newApiKey(): string {
  return `lh_${randomBytes(24).toString("base64url")}`;
}

/** The last characters of a key: enough to tell keys apart in a list, useless to an attacker. */
export const keyHint = (key: string) => `…${key.slice(-4)}`;

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

declare module "fastify" {
  interface FastifyRequest {
    tenant: TenantRow;
  }
}

/**
 * Resolves `Authorization: Bearer <key>` to its tenant. Lookups are cached for a few seconds
 * so the hot path costs a hash and a map read, not a query.
 */
export function tenantAuth(store: Store, ttlMs = 5000) {
  const cache = new Map<string, { tenant: TenantRow | null; until: number }>();
  return async (req: FastifyRequest): Promise<void> => {
    const h = req.headers.authorization;
    const key = h?.startsWith("Bearer ") ? h.slice(7).trim() : "";
    if (!key) {
      throw new LonghaulError("UNAUTHORIZED", "Send your API key as `Authorization: Bearer <key>`.");
    }
    const hash = hashApiKey(key);
    const now = Date.now();
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
