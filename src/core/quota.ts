import { LonghaulError } from "./errors.ts";

/** A tenant's limits (ARCHITECTURE §4.6). Absent or null: unlimited. */
export interface Quotas {
  /** External jobs running at once; excess tasks wait as `pending`, excess dispatches wait. */
  max_concurrent_jobs?: number | null;
  /** Tasks submitted per UTC day; more get 429 with Retry-After. */
  tasks_per_day?: number | null;
  /**
   * Provider tokens (usage.total_tokens) the tenant may spend per `budget_period`; running
   * jobs' declared max tokens are held against it until their usage is known.
   */
  token_budget?: number | null;
  /** The UTC period the token budget counts over; it resets at the period's start. Default month. */
  budget_period?: BudgetPeriod;
  /** Over budget: `park` new work until the budget is raised, or `reject` it. Default park. */
  budget_policy?: "park" | "reject";
  /** Submissions per second (per node), with a burst of twice that. */
  submit_rate_per_s?: number | null;
  /**
   * The bytes the tenant's files may take in all; overrides `limits.storage_quota_bytes` (0
   * lifts the cap for this tenant; absent or null: that limit applies).
   */
  storage_quota_bytes?: number | null;
}

export type BudgetPeriod = "day" | "month";

/** A tenant as stored, with the usage its quotas are checked against. */
export interface TenantRow {
  id: string;
  name: string;
  createdAt: number;
  quotas: Quotas;
  /** Tokens used since the tenant was created. */
  tokensUsed: number;
  /** Tokens used in the current budget period (`quotas.budget_period`, UTC): what the budget counts. */
  tokensThisPeriod: number;
  /** Tokens held against the budget by the tenant's running jobs (their declared max tokens). */
  tokensReserved: number;
  /** The first UTC day (`YYYY-MM-DD`) of the current budget period. */
  budgetPeriodStart: string;
}

const counts = ["max_concurrent_jobs", "tasks_per_day", "token_budget", "storage_quota_bytes"] as const;
const known = [...counts, "budget_policy", "budget_period", "submit_rate_per_s"];

/** Checks quotas from an API body or the CLI; throws VALIDATION_FAILED with the field named. */
export function validateQuotas(value: unknown): Quotas {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      '"quotas" must be an object such as {"max_concurrent_jobs": 2}.',
    );
  }
  const q = value as Record<string, unknown>;
  const out: Quotas = {};
  for (const key of Object.keys(q)) {
    if (!known.includes(key)) {
      throw new LonghaulError("VALIDATION_FAILED", `Unknown quota "${key}"; known: ${known.join(", ")}.`);
    }
  }
  for (const key of counts) {
    const v = q[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `"${key}" must be a whole number ≥ 0, or null for no limit.`,
      );
    }
    out[key] = v;
  }
  if (q.budget_policy !== undefined) {
    if (q.budget_policy !== "park" && q.budget_policy !== "reject") {
      throw new LonghaulError("VALIDATION_FAILED", '"budget_policy" must be "park" or "reject".');
    }
    out.budget_policy = q.budget_policy;
  }
  if (q.budget_period !== undefined) {
    if (q.budget_period !== "day" && q.budget_period !== "month") {
      throw new LonghaulError("VALIDATION_FAILED", '"budget_period" must be "day" or "month".');
    }
    out.budget_period = q.budget_period;
  }
  const rate = q.submit_rate_per_s;
  if (rate !== undefined && rate !== null) {
    if (typeof rate !== "number" || !Number.isFinite(rate) || rate <= 0) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        '"submit_rate_per_s" must be a number > 0, or null for no limit.',
      );
    }
    out.submit_rate_per_s = rate;
  }
  return out;
}

/** The UTC day a time falls on, `YYYY-MM-DD`: the unit of daily quotas and usage. */
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** Whole seconds until the next UTC day, when a daily quota resets. */
export function secondsUntilNextDay(ms: number): number {
  const next = Date.UTC(
    new Date(ms).getUTCFullYear(),
    new Date(ms).getUTCMonth(),
    new Date(ms).getUTCDate() + 1,
  );
  return Math.max(1, Math.ceil((next - ms) / 1000));
}

/** The first UTC day (`YYYY-MM-DD`) of the budget period a time falls in. */
export function periodStart(ms: number, period: BudgetPeriod | undefined): string {
  const day = dayOf(ms);
  return (period ?? "month") === "day" ? day : `${day.slice(0, 8)}01`;
}

/** Whole seconds until the next budget period starts (midnight UTC, or the 1st of the month). */
export function secondsUntilNextPeriod(ms: number, period: BudgetPeriod | undefined): number {
  if ((period ?? "month") === "day") return secondsUntilNextDay(ms);
  const d = new Date(ms);
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - ms) / 1000));
}

/** The budget of the current period is spent (`tokensUsed`: the period's usage). */
export function overBudget(q: Quotas, tokensUsed: number): boolean {
  return q.token_budget != null && tokensUsed >= q.token_budget;
}

/**
 * The tokens a job may use at most, held against its tenant's budget while it runs: the
 * step's `maxTokens`, else the input's `max_tokens` or `max_output_tokens`; null when none
 * is declared (nothing is held, and only actual usage counts).
 */
export function declaredMaxTokens(maxTokens: number | null | undefined, input: unknown): number | null {
  if (maxTokens != null) return maxTokens;
  if (typeof input !== "object" || input === null) return null;
  const i = input as Record<string, unknown>;
  for (const v of [i.max_tokens, i.max_output_tokens]) {
    if (typeof v === "number" && Number.isInteger(v) && v > 0) return v;
  }
  return null;
}

/**
 * ARCHITECTURE §4.6: the daily task limit, and the token budget under the `reject` policy.
 * `submittedToday`: the tenant's tasks submitted today before this one. QUOTA_EXCEEDED,
 * BUDGET_EXCEEDED.
 */
export function checkSubmitQuotas(t: TenantRow, submittedToday: number, now: number): void {
  const q = t.quotas;
  if (q.tasks_per_day != null && submittedToday >= q.tasks_per_day) {
    const retryAfter = secondsUntilNextDay(now);
    throw new LonghaulError(
      "QUOTA_EXCEEDED",
      `This tenant may submit ${q.tasks_per_day} tasks a day and has reached it; try again in ${retryAfter} s (the limit resets at midnight UTC).`,
      { details: { retry_after_s: retryAfter } },
    );
  }
  if (q.budget_policy === "reject" && overBudget(q, t.tokensThisPeriod)) {
    const period = q.budget_period ?? "month";
    const retryAfter = secondsUntilNextPeriod(now, period);
    throw new LonghaulError(
      "BUDGET_EXCEEDED",
      `This tenant has used ${t.tokensThisPeriod} of its ${q.token_budget} tokens this ${period}; the budget resets in ${retryAfter} s (at the start of the next UTC ${period}), or ask an admin to raise token_budget.`,
      { details: { retry_after_s: retryAfter } },
    );
  }
}

/**
 * The token budget's say on admitting a job (ARCHITECTURE §4.6), from the tenant as read in
 * the admitting transaction. `rejected`: the period's budget is spent and the policy is
 * `reject`. `parked`: it is spent under `park`, or the job's `maxTokens` does not fit beside
 * what the period has used and the running jobs hold; a job that ends frees its hold and
 * wakes the parked work, and a new period resets the usage. `ok` with `reserve`: the tokens
 * to hold for the job until its usage is counted (none without a budget or a declared max).
 *
 * A job whose declared max alone is larger than what is left, with no other job holding
 * tokens, is admitted: nothing would ever free room for it, and the budget still stops new
 * work once its usage is counted.
 */
export function admitTokens(
  t: TenantRow,
  maxTokens: number | null,
): { verdict: "ok"; reserve: number } | { verdict: "parked" | "rejected" } {
  const q = t.quotas;
  if (q.token_budget == null) return { verdict: "ok", reserve: 0 };
  if (overBudget(q, t.tokensThisPeriod)) {
    return { verdict: q.budget_policy === "reject" ? "rejected" : "parked" };
  }
  const reserve = maxTokens ?? 0;
  if (
    reserve > 0 &&
    t.tokensReserved > 0 &&
    t.tokensThisPeriod + t.tokensReserved + reserve > q.token_budget
  ) {
    return { verdict: "parked" };
  }
  return { verdict: "ok", reserve };
}

/** Whether admitting work of a tenant with quotas `q` depends on its slots in use: it has a job limit. */
export const countsSlots = (q: Quotas): boolean => q.max_concurrent_jobs != null;

/**
 * Whether admitting a job of a tenant with quotas `q` must hold its slot lock: a job limit or
 * a token budget applies, so two admissions must not both take its last slot or tokens.
 */
export const admissionLocks = (q: Quotas): boolean => q.max_concurrent_jobs != null || q.token_budget != null;

/** Whether the tenant's jobs holding a slot leave one free under its job limit. */
const slotFree = (q: Quotas, slotsInUse: number): boolean =>
  q.max_concurrent_jobs == null || slotsInUse < q.max_concurrent_jobs;

/**
 * ARCHITECTURE §4.6: whether a new task starts now, or waits as pending (parked) until its
 * tenant has room: over its token budget under the `park` policy (under `reject` it starts,
 * and its jobs are refused at admission), or at its job limit. `slotsInUse`: the tenant's
 * jobs holding a slot, which only ever make the answer worse: a caller may leave them
 * uncounted (0) unless `countsSlots` and the answer at 0 is `started`.
 */
export function taskStart(t: TenantRow | null, slotsInUse: number): "started" | "parked" {
  if (!t) return "started";
  const q = t.quotas;
  if (q.budget_policy !== "reject" && overBudget(q, t.tokensThisPeriod)) return "parked";
  return slotFree(q, slotsInUse) ? "started" : "parked";
}

/**
 * ARCHITECTURE §4.6: admitting a job before its provider creates it, from its tenant as read
 * under the slot lock: the token budget's verdict (`admitTokens`), then a free slot under the
 * job limit. `ok` with the tokens to hold for it; `parked` until a slot or tokens free;
 * `rejected` over the budget under the `reject` policy. `slotsInUse` as for `taskStart`: it
 * only ever makes the verdict worse.
 */
export function admitJob(
  t: TenantRow | null,
  maxTokens: number | null,
  slotsInUse: number,
): { verdict: "ok"; reserve: number } | { verdict: "parked" | "rejected" } {
  if (!t) return { verdict: "ok", reserve: 0 };
  const tokens = admitTokens(t, maxTokens);
  if (tokens.verdict !== "ok") return tokens;
  return slotFree(t.quotas, slotsInUse) ? tokens : { verdict: "parked" };
}
