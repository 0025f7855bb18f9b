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
import { advisoryLock, type Ctx } from "./db.ts";

/**
 * A tenant's columns `t.*` with its token usage of today ($1) and of this month (from the
 * month's first day, $2), and the tokens its live jobs hold reserved.
 */
const TENANT_COLUMNS = `t.*,
  (SELECT coalesce(sum(u.tokens), 0)::bigint FROM usage_daily u WHERE u.tenant_id = t.id AND u.day = $1) AS tokens_day,
  (SELECT coalesce(sum(u.tokens), 0)::bigint FROM usage_daily u WHERE u.tenant_id = t.id AND u.day >= $2)
    AS tokens_month,
  (SELECT coalesce(sum(j.reserved_tokens), 0)::bigint FROM jobs j
    WHERE j.tenant_id = t.id AND j.status IN ('pending', 'created', 'running') AND j.reserved_tokens > 0)
    AS tokens_reserved`;

const periods = (c: Ctx) => [periodStart(c.clock.now(), "day"), periodStart(c.clock.now(), "month")];

export async function tenant(c: Ctx, id: string): Promise<TenantRow | null> {
  const r = await c.sql.get<TenantDbRow>(`SELECT ${TENANT_COLUMNS} FROM tenants t WHERE t.id = $3`, [
    ...periods(c),
    id,
  ]);
  return r ? toTenant(r, c.clock.now()) : null;
}

async function insertKey(c: Ctx, tenantId: string, keyHash: string, hint: string | null): Promise<string> {
  await c.sql.run(
    `INSERT INTO api_keys (key_hash, tenant_id, id, hint, created_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (key_hash) DO NOTHING`,
    [keyHash, tenantId, c.ids.next("key"), hint, c.clock.now()],
  );
  return (await c.sql.get<{ id: string }>("SELECT id FROM api_keys WHERE key_hash = $1", [keyHash]))!.id;
}

export async function createTenant(
  c: Ctx,
  t: { id?: string; name: string; keyHash: string; keyHint?: string; quotas?: Quotas },
): Promise<TenantRow> {
  const id = t.id ?? c.ids.next("tn");
  await c.sql.run("INSERT INTO tenants (id, name, created_at, quotas) VALUES ($1, $2, $3, $4)", [
    id,
    t.name,
    c.clock.now(),
    json(t.quotas ?? {}),
  ]);
  await insertKey(c, id, t.keyHash, t.keyHint ?? null);
  return (await tenant(c, id))!;
}

/** Creates the tenant unless it exists, and adds the key unless it is known; safe to race. */
export async function ensureTenant(
  c: Ctx,
  t: { id: string; name: string; keyHash: string },
): Promise<TenantRow> {
  await c.sql.run(
    "INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
    [t.id, t.name, c.clock.now()],
  );
  await insertKey(c, t.id, t.keyHash, null);
  return (await tenant(c, t.id))!;
}

export async function tenantByKeyHash(c: Ctx, keyHash: string): Promise<TenantRow | null> {
  const r = await c.sql.get<TenantDbRow>(
    `SELECT ${TENANT_COLUMNS} FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.key_hash = $3 AND k.revoked_at IS NULL`,
    [...periods(c), keyHash],
  );
  return r ? toTenant(r, c.clock.now()) : null;
}

export async function listTenants(c: Ctx): Promise<TenantRow[]> {
  return (
    await c.sql.all<TenantDbRow>(
      `SELECT ${TENANT_COLUMNS} FROM tenants t ORDER BY t.created_at, t.id`,
      periods(c),
    )
  ).map((r) => toTenant(r, c.clock.now()));
}

/** Changes name or quotas; new quotas wake the tenant's parked work, which re-checks them. TENANT_NOT_FOUND. */
export async function updateTenant(
  c: Ctx,
  id: string,
  patch: { name?: string; quotas?: Quotas },
): Promise<TenantRow> {
  const r = await c.sql.get<TenantDbRow>("SELECT * FROM tenants WHERE id = $1 FOR UPDATE", [id]);
  if (!r) throw new LonghaulError("TENANT_NOT_FOUND", `No tenant ${id}.`);
  const t = toTenant(r);
  await c.sql.run("UPDATE tenants SET name = $1, quotas = $2 WHERE id = $3", [
    patch.name ?? t.name,
    json(patch.quotas ?? t.quotas),
    id,
  ]);
  await wakeParked(c, id);
  return (await tenant(c, id))!;
}

/** TENANT_NOT_FOUND. Returns the key's id. */
export async function addApiKey(c: Ctx, tenantId: string, keyHash: string, hint: string): Promise<string> {
  if (!(await tenant(c, tenantId))) throw new LonghaulError("TENANT_NOT_FOUND", `No tenant ${tenantId}.`);
  return insertKey(c, tenantId, keyHash, hint);
}

/** KEY_NOT_FOUND unless the tenant has that key, not yet revoked. */
export async function revokeApiKey(c: Ctx, tenantId: string, keyId: string): Promise<void> {
  const changed = await c.sql.run(
    "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND tenant_id = $3 AND revoked_at IS NULL",
    [c.clock.now(), keyId, tenantId],
  );
  if (changed === 0)
    throw new LonghaulError("KEY_NOT_FOUND", `No active key ${keyId} for tenant ${tenantId}.`);
}

export async function listApiKeys(c: Ctx, tenantId: string): Promise<ApiKeyRow[]> {
  const rows = await c.sql.all<ApiKeyDbRow>(
    "SELECT id, hint, created_at, revoked_at FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, id",
    [tenantId],
  );
  return rows.map(toApiKey);
}

type Counter = "tasks_submitted" | "jobs_created" | "jobs_failed" | "tokens";

/**
 * Adds to today's usage counters of a tenant (in the caller's transaction) and returns the
 * counters after the addition. The row stays locked until commit, so a check made against
 * the returned counts cannot be raced past by another transaction.
 */
export async function countUsage(
  c: Ctx,
  tenantId: string,
  add: Partial<Record<Counter, number>>,
): Promise<Record<Counter, number>> {
  const counts = (await c.sql.get<Record<Counter, number>>(
    `INSERT INTO usage_daily AS u (tenant_id, day, tasks_submitted, jobs_created, jobs_failed, tokens)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id, day) DO UPDATE SET tasks_submitted = u.tasks_submitted + excluded.tasks_submitted,
       jobs_created = u.jobs_created + excluded.jobs_created, jobs_failed = u.jobs_failed + excluded.jobs_failed,
       tokens = u.tokens + excluded.tokens
     RETURNING tasks_submitted, jobs_created, jobs_failed, tokens`,
    [
      tenantId,
      dayOf(c.clock.now()),
      add.tasks_submitted ?? 0,
      add.jobs_created ?? 0,
      add.jobs_failed ?? 0,
      add.tokens ?? 0,
    ],
  ))!;
  if (add.tokens) {
    await c.sql.run("UPDATE tenants SET tokens_used = tokens_used + $1 WHERE id = $2", [
      add.tokens,
      tenantId,
    ]);
  }
  return counts;
}

export async function tasksSubmittedToday(c: Ctx, tenantId: string): Promise<number> {
  const r = await c.sql.get<{ n: number }>(
    "SELECT tasks_submitted AS n FROM usage_daily WHERE tenant_id = $1 AND day = $2",
    [tenantId, dayOf(c.clock.now())],
  );
  return r?.n ?? 0;
}

/**
 * Jobs of the tenant running at its provider, or admitted and being created. The caller that
 * grants a slot holds `lockSlots` first, so two admissions cannot both see the last free one.
 */
export async function slotsInUse(c: Ctx, tenantId: string): Promise<number> {
  return (await c.sql.get<{ n: number }>(
    `SELECT count(*) AS n FROM jobs
      WHERE tenant_id = $1 AND (status IN ('created', 'running') OR (status = 'pending' AND slot))`,
    [tenantId],
  ))!.n;
}

export const lockSlots = (c: Ctx, tenantId: string) => advisoryLock(c, `job_slots:${tenantId}`);

/** Makes the tenant's parked work due now, in the order it was queued. */
export async function wakeParked(c: Ctx, tenantId: string): Promise<void> {
  const woken = await c.sql.run(
    "UPDATE work_items SET parked = FALSE, run_at = $1 WHERE tenant_id = $2 AND parked AND status = 'pending'",
    [c.clock.now(), tenantId],
  );
  if (woken > 0) c.effects.work = true;
}

export async function usage(c: Ctx, tenantId: string, days: number): Promise<TenantUsage | null> {
  const t = await tenant(c, tenantId);
  if (!t) return null;
  const byStatus = await c.sql.all<{ status: TaskStatus; n: number }>(
    "SELECT status, count(*) AS n FROM tasks WHERE tenant_id = $1 GROUP BY status",
    [tenantId],
  );
  const daily = await c.sql.all<{
    day: string;
    tasks_submitted: number;
    jobs_created: number;
    jobs_failed: number;
    tokens: number;
  }>(
    `SELECT day, tasks_submitted, jobs_created, jobs_failed, tokens FROM usage_daily
      WHERE tenant_id = $1 AND day >= $2 ORDER BY day`,
    [tenantId, dayOf(c.clock.now() - (days - 1) * 86_400_000)],
  );
  const failures = await c.sql.all<JobFailureDbRow>(
    `SELECT id, task_id, step_id, provider, external_id, error, updated_at FROM jobs
      WHERE tenant_id = $1 AND status = 'failed' ORDER BY updated_at DESC LIMIT 10`,
    [tenantId],
  );
  const running = (await c.sql.get<{ n: number }>(
    "SELECT count(*) AS n FROM jobs WHERE tenant_id = $1 AND status IN ('created', 'running')",
    [tenantId],
  ))!.n;
  return {
    tenant: t,
    tasksByStatus: Object.fromEntries(byStatus.map((r) => [r.status, r.n])),
    jobsRunning: running,
    daily,
    recentJobFailures: failures.map(toJobFailure),
  };
}
