import type { FastifyRequest } from "fastify";
import { hashApiKey } from "../core/api-keys.ts";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { ReadScope } from "../core/read-scope.ts";
import type { TenantRow, TenantStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { looksLikeToken } from "../tokens/read-token.ts";
import { readTokenClaims } from "../usecases/mint-read-token.ts";

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
    req.apiKeyHash = hash;
  };
}

declare module "fastify" {
  interface FastifyRequest {
    /** The hash of the API key the request came with (never the key); absent for a read token. */
    apiKeyHash?: string;
    /** Set when the request came with a read token rather than an API key: what it may read. */
    readScope?: ReadScope;
    /** When the request's read token expires (ms); links minted for its holder expire by then. */
    readExpiresAt?: number;
  }
  interface FastifyContextConfig {
    /** The route accepts a read token (POST /v1/tokens); every other route refuses one with TOKEN_SCOPE. */
    readToken?: boolean;
  }
}

/**
 * The API's authentication: an API key resolves to its tenant (`tenantAuth`); a read token
 * (src/tokens/read-token.ts), told apart by its shape and sent as `Authorization: Bearer`
 * or, for browsers' EventSource and WebSocket, as `?token=`, is verified (MAC, expiry) and
 * resolves to the tenant it names, with its scope on `req.readScope`. A read token is refused
 * with TOKEN_SCOPE on every route not marked `config.readToken`, writes all among them; the
 * routes that accept one check the task against the scope.
 */
export function apiAuth(store: TenantStore, clock: Clock, keyring: Keyring, ttlMs = 5000) {
  const byKey = tenantAuth(store, clock, ttlMs);
  // Tenants named by tokens, for a few seconds, so a page following a task costs no query per request.
  const tenants = new Map<string, { tenant: TenantRow; until: number }>();
  return async (req: FastifyRequest): Promise<void> => {
    const h = req.headers.authorization;
    const bearer = h?.startsWith("Bearer ") ? h.slice(7).trim() : "";
    const query = (req.query as { token?: unknown } | undefined)?.token;
    const credential = bearer || (typeof query === "string" ? query : "");
    if (!looksLikeToken(credential)) return byKey(req);
    const claims = readTokenClaims({ keyring, clock }, credential);
    if (req.routeOptions.config?.readToken !== true) {
      throw new LonghaulError(
        "TOKEN_SCOPE",
        `A read token only reads: GET /v1/tasks/:id, GET /v1/events and GET /v1/events/ws. ${req.method} ${req.routeOptions.url ?? "this route"} needs the tenant's API key.`,
      );
    }
    const now = clock.now();
    let hit = tenants.get(claims.tenantId);
    if (!hit || hit.until < now) {
      const tenant = await store.getTenant(claims.tenantId);
      if (!tenant)
        throw new LonghaulError("UNAUTHORIZED", "The tenant this read token names does not exist.");
      hit = { tenant, until: now + ttlMs };
      tenants.delete(claims.tenantId);
      tenants.set(claims.tenantId, hit);
      if (tenants.size > CACHED_KEYS) tenants.delete(tenants.keys().next().value as string);
    }
    req.tenant = hit.tenant;
    req.readScope = claims.scope;
    req.readExpiresAt = claims.expiresAt;
  };
}
