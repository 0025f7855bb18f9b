import { LonghaulError } from "../../core/errors.ts";
import { dayOf, periodStart, type Quotas } from "../../core/quotas.ts";
import type { TaskStatus } from "../../core/task-state.ts";
import { json } from "../json.ts";
import {
  type ApiKeyDbRow,
  type JobFailureDbRow,
  type TenantDbRow,
  toApiKey,
  toJobFailure,
  toTenant,
} from "../rows.ts";
import type { ApiKeyRow, TenantRow, TenantUsage } from "../store.ts";
import type { Ctx } from "./db.ts";

/**
 * A tenant's columns `t.*` with its token usage of today and of this month, and the tokens
 * its live jobs hold reserved; takes the day and the month's first day as its two parameters.
 */
const TENANT_COLUMNS = `t.*,
  (SELECT coalesce(sum(u.tokens), 0) FROM usage_daily u WHERE u.tenant_id = t.id AND u.day = ?) AS tokens_day,
  (SELECT coalesce(sum(u.tokens), 0) FROM usage_daily u WHERE u.tenant_id = t.id AND u.day >= ?) AS tokens_month,
  (SELECT coalesce(sum(j.reserved_tokens), 0) FROM jobs j
    WHERE j.tenant_id = t.id AND j.status IN ('pending', 'created', 'running') AND j.reserved_tokens > 0)
    AS tokens_reserved`;

const periods = (c: Ctx) => [periodStart(c.clock.now(), "day"), periodStart(c.clock.now(), "month")];

export function tenant(c: Ctx, id: string): TenantRow | null {
  const r = c.sql.get<TenantDbRow>(
    `SELECT ${TENANT_COLUMNS} FROM tenants t WHERE t.id = ?`,
    ...periods(c),
    id,
  );
  return r ? toTenant(r, c.clock.now()) : null;
}

function insertKey(c: Ctx, tenantId: string, keyHash: string, hint: string | null): string {
  const id = c.ids.next("key");
  c.sql.run(
    "INSERT INTO api_keys (key_hash, tenant_id, id, hint, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (key_hash) DO NOTHING",
    keyHash,
    tenantId,
    id,
    hint,
    c.clock.now(),
  );
  return c.sql.get<{ id: string }>("SELECT id FROM api_keys WHERE key_hash = ?", keyHash)!.id;
}

export function createTenant(
  c: Ctx,
  t: { id?: string; name: string; keyHash: string; keyHint?: string; quotas?: Quotas },
): TenantRow {
  const id = t.id ?? c.ids.next("tn");
  c.sql.run(
    "INSERT INTO tenants (id, name, created_at, quotas) VALUES (?, ?, ?, ?)",
    id,
    t.name,
    c.clock.now(),
    json(t.quotas ?? {}),
  );
  insertKey(c, id, t.keyHash, t.keyHint ?? null);
  return tenant(c, id)!;
}

export function ensureTenant(c: Ctx, t: { id: string; name: string; keyHash: string }): TenantRow {
  c.sql.run(
    "INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
    t.id,
    t.name,
    c.clock.now(),
  );
  insertKey(c, t.id, t.keyHash, null);
  return tenant(c, t.id)!;
}

export function tenantByKeyHash(c: Ctx, keyHash: string): TenantRow | null {
  const r = c.sql.get<TenantDbRow>(
    `SELECT ${TENANT_COLUMNS} FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
    ...periods(c),
    keyHash,
  );
  return r ? toTenant(r, c.clock.now()) : null;
}

export function listTenants(c: Ctx): TenantRow[] {
  return c.sql
    .all<TenantDbRow>(`SELECT ${TENANT_COLUMNS} FROM tenants t ORDER BY t.created_at, t.id`, ...periods(c))
    .map((r) => toTenant(r, c.clock.now()));
}

/** Changes name or quotas; new quotas wake the tenant's parked work, which re-checks them. */
export function updateTenant(c: Ctx, id: string, patch: { name?: string; quotas?: Quotas }): TenantRow {
  const t = tenant(c, id);
  if (!t) throw new LonghaulError("TENANT_NOT_FOUND", `No tenant ${id}.`);
  c.sql.run(
    "UPDATE tenants SET name = ?, quotas = ? WHERE id = ?",
    patch.name ?? t.name,
    json(patch.quotas ?? t.quotas),
    id,
  );
  wakeParked(c, id);
  return tenant(c, id)!;
}

export function addApiKey(c: Ctx, tenantId: string, keyHash: string, hint: string): string {
  if (!tenant(c, tenantId)) throw new LonghaulError("TENANT_NOT_FOUND", `No tenant ${tenantId}.`);
  return insertKey(c, tenantId, keyHash, hint);
}

export function revokeApiKey(c: Ctx, tenantId: string, keyId: string): void {
  const changed = c.sql.run(
    "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND tenant_id = ? AND revoked_at IS NULL",
    c.clock.now(),
    keyId,
    tenantId,
  ).changes;
  if (changed === 0)
    throw new LonghaulError("KEY_NOT_FOUND", `No active key ${keyId} for tenant ${tenantId}.`);
}

export function listApiKeys(c: Ctx, tenantId: string): ApiKeyRow[] {
  return c.sql
    .all<ApiKeyDbRow>(
      "SELECT id, hint, created_at, revoked_at FROM api_keys WHERE tenant_id = ? ORDER BY created_at, id",
      tenantId,
    )
    .map(toApiKey);
}

/** Adds to today's usage counters of a tenant (in the caller's transaction). */
export function countUsage(
  c: Ctx,
  tenantId: string,
  add: Partial<Record<"tasks_submitted" | "jobs_created" | "jobs_failed" | "tokens", number>>,
): void {
  const day = dayOf(c.clock.now());
  c.sql.run(
    `INSERT INTO usage_daily (tenant_id, day, tasks_submitted, jobs_created, jobs_failed, tokens) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (tenant_id, day) DO UPDATE SET tasks_submitted = tasks_submitted + excluded.tasks_submitted,
       jobs_created = jobs_created + excluded.jobs_created, jobs_failed = jobs_failed + excluded.jobs_failed,
       tokens = tokens + excluded.tokens`,
    tenantId,
    day,
    add.tasks_submitted ?? 0,
    add.jobs_created ?? 0,
    add.jobs_failed ?? 0,
    add.tokens ?? 0,
  );
  if (add.tokens)
    c.sql.run("UPDATE tenants SET tokens_used = tokens_used + ? WHERE id = ?", add.tokens, tenantId);
}

export function tasksSubmittedToday(c: Ctx, tenantId: string): number {
  return (
    c.sql.get<{ n: number }>(
      "SELECT tasks_submitted AS n FROM usage_daily WHERE tenant_id = ? AND day = ?",
      tenantId,
      dayOf(c.clock.now()),
    )?.n ?? 0
  );
}

/** Jobs of the tenant running at its provider, or admitted and being created. */
export function slotsInUse(c: Ctx, tenantId: string): number {
  return c.sql.get<{ n: number }>(
    `SELECT count(*) AS n FROM jobs
      WHERE tenant_id = ? AND (status IN ('created', 'running') OR (status = 'pending' AND slot = 1))`,
    tenantId,
  )!.n;
}

/** Makes the tenant's parked work due now, in the order it was queued. */
export function wakeParked(c: Ctx, tenantId: string): void {
  c.sql.run(
    "UPDATE work_items SET parked = 0, run_at = ? WHERE tenant_id = ? AND parked = 1 AND status = 'pending'",
    c.clock.now(),
    tenantId,
  );
}

export function usage(c: Ctx, tenantId: string, days: number): TenantUsage | null {
  const t = tenant(c, tenantId);
  if (!t) return null;
  const byStatus = Object.fromEntries(
    c.sql
      .all<{ status: TaskStatus; n: number }>(
        "SELECT status, count(*) AS n FROM tasks WHERE tenant_id = ? GROUP BY status",
        tenantId,
      )
      .map((r) => [r.status, r.n]),
  );
  const since = dayOf(c.clock.now() - (days - 1) * 86_400_000);
  const daily = c.sql.all<{
    day: string;
    tasks_submitted: number;
    jobs_created: number;
    jobs_failed: number;
    tokens: number;
  }>(
    "SELECT day, tasks_submitted, jobs_created, jobs_failed, tokens FROM usage_daily WHERE tenant_id = ? AND day >= ? ORDER BY day",
    tenantId,
    since,
  );
  const failures = c.sql
    .all<JobFailureDbRow>(
      `SELECT id, task_id, step_id, provider, external_id, error, updated_at FROM jobs
        WHERE tenant_id = ? AND status = 'failed' ORDER BY updated_at DESC LIMIT 10`,
      tenantId,
    )
    .map(toJobFailure);
  return {
    tenant: t,
    tasksByStatus: byStatus,
    jobsRunning: slotsInUseOrActive(c, tenantId),
    daily,
    recentJobFailures: failures,
  };
}

function slotsInUseOrActive(c: Ctx, tenantId: string): number {
  return c.sql.get<{ n: number }>(
    "SELECT count(*) AS n FROM jobs WHERE tenant_id = ? AND status IN ('created', 'running')",
    tenantId,
  )!.n;
}
