import { LonghaulError } from "../../core/errors.ts";
import { atProviderJobStatuses, liveJobStatuses, slotHolders } from "../../core/job.ts";
import { dayOf, periodStart, type Quotas } from "../../core/quota.ts";
import type { TaskStatus } from "../../core/task.ts";
import { json } from "../json.ts";
import {
  type ApiKeyDbRow,
  type JobFailureDbRow,
  type TenantDbRow,
  toApiKey,
  toJobFailure,
  toTenant,
} from "../rows.ts";
import { inStates } from "../sql/states.ts";
import type { Dialect, Tx } from "../sql/tx.ts";
import type { ApiKeyRow, TenantRow, TenantUsage } from "../store.ts";

/*
 * Tenants, their API keys and their usage counters, written once for both dialects.
 * No operation here emits task events. Only `updateTenant` (through `wakeParked`) makes work due.
 */

/**
 * A tenant's columns `t.*` with its token usage of today and of this month, and the tokens
 * its live jobs hold reserved; its first two parameters are the day and the month's first day.
 * The sums are cast to bigint so PostgreSQL returns them as numbers, not numeric strings.
 */
const TENANT_COLUMNS = `t.*,
  CAST((SELECT coalesce(sum(u.tokens), 0) FROM usage_daily u WHERE u.tenant_id = t.id AND u.day = ?) AS bigint)
    AS tokens_day,
  CAST((SELECT coalesce(sum(u.tokens), 0) FROM usage_daily u WHERE u.tenant_id = t.id AND u.day >= ?) AS bigint)
    AS tokens_month,
  CAST((SELECT coalesce(sum(j.reserved_tokens), 0) FROM jobs j
    WHERE j.tenant_id = t.id AND ${inStates("j.status", liveJobStatuses)} AND j.reserved_tokens > 0) AS bigint)
    AS tokens_reserved`;

/** Which jobs hold a slot (core's `slotHolders`), rendered once. */
const heldSlot = {
  always: inStates("status", slotHolders.always),
  whenAdmitted: inStates("status", slotHolders.whenAdmitted),
};

type Counter = "tasks_submitted" | "jobs_created" | "jobs_failed" | "tokens";

/** The statements the tenant reads, usage counters, job slots and the usage report below share. */
const tenantSql = {
  byId: `SELECT ${TENANT_COLUMNS} FROM tenants t WHERE t.id = ?`,
  countUsage: `INSERT INTO usage_daily AS u (tenant_id, day, tasks_submitted, jobs_created, jobs_failed, tokens)
     VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (tenant_id, day) DO UPDATE SET tasks_submitted = u.tasks_submitted + excluded.tasks_submitted,
       jobs_created = u.jobs_created + excluded.jobs_created, jobs_failed = u.jobs_failed + excluded.jobs_failed,
       tokens = u.tokens + excluded.tokens
     RETURNING tasks_submitted, jobs_created, jobs_failed, tokens`,
  addTokens: "UPDATE tenants SET tokens_used = tokens_used + ? WHERE id = ?",
  tasksSubmittedToday: "SELECT tasks_submitted AS n FROM usage_daily WHERE tenant_id = ? AND day = ?",
  jobsAtProvider: `SELECT count(*) AS n FROM jobs WHERE tenant_id = ? AND ${inStates("status", atProviderJobStatuses)}`,
  slotsInUse: (d: Dialect) => `SELECT count(*) AS n FROM jobs
      WHERE tenant_id = ? AND (${heldSlot.always} OR (${heldSlot.whenAdmitted} AND slot = ${d.true}))`,
  wakeParked: (d: Dialect) =>
    `UPDATE work_items SET parked = ${d.false}, run_at = ? WHERE tenant_id = ? AND parked = ${d.true} AND status = 'pending'`,
};

/** The two period parameters of TENANT_COLUMNS at `now`. */
const periods = (now: number) => [periodStart(now, "day"), periodStart(now, "month")];

/** countUsage's parameters: the tenant, today, then the four counters in column order. */
const usageParams = (now: number, tenantId: string, add: Partial<Record<Counter, number>>) => [
  tenantId,
  dayOf(now),
  add.tasks_submitted ?? 0,
  add.jobs_created ?? 0,
  add.jobs_failed ?? 0,
  add.tokens ?? 0,
];

/** Reads a tenant with its usage. No locks. */
export async function tenant(tx: Tx, id: string): Promise<TenantRow | null> {
  const r = await tx.get<TenantDbRow>(tenantSql.byId, [...periods(tx.clock.now()), id]);
  return r ? toTenant(r, tx.clock.now()) : null;
}

/** Adds a key unless its hash is known already; returns the id of the key with that hash. */
async function insertKey(tx: Tx, tenantId: string, keyHash: string, hint: string | null): Promise<string> {
  await tx.run(
    `INSERT INTO api_keys (key_hash, tenant_id, id, hint, created_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (key_hash) DO NOTHING`,
    [keyHash, tenantId, tx.ids.next("key"), hint, tx.clock.now()],
  );
  return (await tx.get<{ id: string }>("SELECT id FROM api_keys WHERE key_hash = ?", [keyHash]))!.id;
}

/** Inserts a tenant and its first key. No locks, no events, nothing enqueued. */
export async function createTenant(
  tx: Tx,
  t: { id?: string; name: string; keyHash: string; keyHint?: string; quotas?: Quotas },
): Promise<TenantRow> {
  const id = t.id ?? tx.ids.next("tn");
  await tx.run("INSERT INTO tenants (id, name, created_at, quotas) VALUES (?, ?, ?, ?)", [
    id,
    t.name,
    tx.clock.now(),
    json(t.quotas ?? {}),
  ]);
  await insertKey(tx, id, t.keyHash, t.keyHint ?? null);
  return (await tenant(tx, id))!;
}

/**
 * Creates the tenant unless it exists, and adds the key unless it is known; safe to race (both
 * inserts skip a conflict). No locks, no events, nothing enqueued.
 */
export async function ensureTenant(
  tx: Tx,
  t: { id: string; name: string; keyHash: string },
): Promise<TenantRow> {
  await tx.run("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING", [
    t.id,
    t.name,
    tx.clock.now(),
  ]);
  await insertKey(tx, t.id, t.keyHash, null);
  return (await tenant(tx, t.id))!;
}

/** The tenant holding an unrevoked key with this hash. No locks. */
export async function tenantByKeyHash(tx: Tx, keyHash: string): Promise<TenantRow | null> {
  const r = await tx.get<TenantDbRow>(
    `SELECT ${TENANT_COLUMNS} FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
    [...periods(tx.clock.now()), keyHash],
  );
  return r ? toTenant(r, tx.clock.now()) : null;
}

/** Every tenant with its token usage, oldest first. No locks. */
export async function listTenants(tx: Tx): Promise<TenantRow[]> {
  const rows = await tx.all<TenantDbRow>(
    `SELECT ${TENANT_COLUMNS} FROM tenants t ORDER BY t.created_at, t.id`,
    periods(tx.clock.now()),
  );
  return rows.map((r) => toTenant(r, tx.clock.now()));
}

/**
 * Changes name or quotas; new quotas wake the tenant's parked work, which re-checks them.
 * Locks the tenant's row (FOR UPDATE) so two updates do not both start from the same row;
 * wakes the workers if parked work became due. TENANT_NOT_FOUND.
 */
export async function updateTenant(
  tx: Tx,
  id: string,
  patch: { name?: string; quotas?: Quotas },
): Promise<TenantRow> {
  const r = await tx.get<TenantDbRow>(`SELECT * FROM tenants WHERE id = ?${tx.d.forUpdate}`, [id]);
  if (!r) throw new LonghaulError("TENANT_NOT_FOUND", `No tenant ${id}.`);
  const t = toTenant(r);
  await tx.run("UPDATE tenants SET name = ?, quotas = ? WHERE id = ?", [
    patch.name ?? t.name,
    json(patch.quotas ?? t.quotas),
    id,
  ]);
  await wakeParked(tx, id);
  return (await tenant(tx, id))!;
}

/** Adds a key to a tenant; returns the key's id. No locks. TENANT_NOT_FOUND. */
export async function addApiKey(tx: Tx, tenantId: string, keyHash: string, hint: string): Promise<string> {
  if (!(await tenant(tx, tenantId))) throw new LonghaulError("TENANT_NOT_FOUND", `No tenant ${tenantId}.`);
  return insertKey(tx, tenantId, keyHash, hint);
}

/** KEY_NOT_FOUND unless the tenant has that key, not yet revoked. No locks. */
export async function revokeApiKey(tx: Tx, tenantId: string, keyId: string): Promise<void> {
  const changed = await tx.run(
    "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND tenant_id = ? AND revoked_at IS NULL",
    [tx.clock.now(), keyId, tenantId],
  );
  if (changed === 0)
    throw new LonghaulError("KEY_NOT_FOUND", `No active key ${keyId} for tenant ${tenantId}.`);
}

/** A tenant's keys, revoked ones included, with their hints. No locks. */
export async function listApiKeys(tx: Tx, tenantId: string): Promise<ApiKeyRow[]> {
  const rows = await tx.all<ApiKeyDbRow>(
    "SELECT id, hint, created_at, revoked_at FROM api_keys WHERE tenant_id = ? ORDER BY created_at, id",
    [tenantId],
  );
  return rows.map(toApiKey);
}

/**
 * Adds to today's usage counters of a tenant (in the caller's transaction) and returns the
 * counters after the addition. On PostgreSQL the row stays locked until commit, so a check
 * made against the returned counts cannot be raced past by another transaction.
 */
export async function countUsage(
  tx: Tx,
  tenantId: string,
  add: Partial<Record<Counter, number>>,
): Promise<Record<Counter, number>> {
  const counts = (await tx.get<Record<Counter, number>>(
    tenantSql.countUsage,
    usageParams(tx.clock.now(), tenantId, add),
  ))!;
  if (add.tokens) await tx.run(tenantSql.addTokens, [add.tokens, tenantId]);
  return counts;
}

/** Tasks the tenant submitted today (UTC), for the daily quota. No locks. */
export async function tasksSubmittedToday(tx: Tx, tenantId: string): Promise<number> {
  const r = await tx.get<{ n: number }>(tenantSql.tasksSubmittedToday, [tenantId, dayOf(tx.clock.now())]);
  return r?.n ?? 0;
}

/**
 * Jobs of the tenant running at its provider, or admitted and being created. The caller that
 * grants a slot holds `lockSlots` first, so two admissions cannot both see the last free one.
 */
export async function slotsInUse(tx: Tx, tenantId: string): Promise<number> {
  return (await tx.get<{ n: number }>(tenantSql.slotsInUse(tx.d), [tenantId]))!.n;
}

/** Takes the tenant's job-slot lock (see `slotsInUse`), held to the end of the transaction. */
export const lockSlots = (tx: Tx, tenantId: string) => tx.lock(`job_slots:${tenantId}`);

/** Makes the tenant's parked work due now, in the order it was queued; wakes the workers if any. */
export async function wakeParked(tx: Tx, tenantId: string): Promise<void> {
  const woken = await tx.run(tenantSql.wakeParked(tx.d), [tx.clock.now(), tenantId]);
  if (woken > 0) tx.wake();
}

/** The tenant's usage report; reads only (PostgreSQL runs it in one snapshot). */
export async function usage(tx: Tx, tenantId: string, days: number): Promise<TenantUsage | null> {
  const t = await tenant(tx, tenantId);
  if (!t) return null;
  const byStatus = await tx.all<{ status: TaskStatus; n: number }>(
    "SELECT status, count(*) AS n FROM tasks WHERE tenant_id = ? GROUP BY status",
    [tenantId],
  );
  const daily = await tx.all<{
    day: string;
    tasks_submitted: number;
    jobs_created: number;
    jobs_failed: number;
    tokens: number;
  }>(
    `SELECT day, tasks_submitted, jobs_created, jobs_failed, tokens FROM usage_daily
      WHERE tenant_id = ? AND day >= ? ORDER BY day`,
    [tenantId, dayOf(tx.clock.now() - (days - 1) * 86_400_000)],
  );
  const failures = await tx.all<JobFailureDbRow>(
    `SELECT id, task_id, step_id, provider, external_id, error, updated_at FROM jobs
      WHERE tenant_id = ? AND status = 'failed' ORDER BY updated_at DESC LIMIT 10`,
    [tenantId],
  );
  const running = (await tx.get<{ n: number }>(tenantSql.jobsAtProvider, [tenantId]))!.n;
  return {
    tenant: t,
    tasksByStatus: Object.fromEntries(byStatus.map((r) => [r.status, r.n])),
    jobsRunning: running,
    daily,
    recentJobFailures: failures.map(toJobFailure),
  };
}
