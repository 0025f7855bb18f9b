import { periods, tenantSql, usageParams } from "../ops/tenant-ops.ts";
import type { TenantDbRow } from "../rows.ts";
import { toTenant } from "../rows.ts";
import { sqliteDialect } from "../sql/tx.ts";
import type { TenantRow } from "../store.ts";
import type { Ctx } from "./db.ts";

/*
 * Synchronous forms of the shared tenant operations (ops/tenant-ops.ts), for the SQLite
 * operations that are not yet written against a Tx (engine). They run the same
 * SQL texts; they go once those operations are shared.
 */

export function tenant(c: Ctx, id: string): TenantRow | null {
  const r = c.sql.get<TenantDbRow>(tenantSql.byId, ...periods(c.clock.now()), id);
  return r ? toTenant(r, c.clock.now()) : null;
}

export function countUsage(c: Ctx, tenantId: string, add: Parameters<typeof usageParams>[2]): void {
  c.sql.get(tenantSql.countUsage, ...usageParams(c.clock.now(), tenantId, add));
  if (add.tokens) c.sql.run(tenantSql.addTokens, add.tokens, tenantId);
}

export function slotsInUse(c: Ctx, tenantId: string): number {
  return c.sql.get<{ n: number }>(tenantSql.slotsInUse(sqliteDialect), tenantId)!.n;
}

export function wakeParked(c: Ctx, tenantId: string): void {
  c.sql.run(tenantSql.wakeParked(sqliteDialect), c.clock.now(), tenantId);
}
