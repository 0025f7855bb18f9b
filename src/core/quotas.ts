import { LonghaulError } from "./errors.ts";

/** A tenant's limits (ARCHITECTURE §4.6). Absent or null: unlimited. */
export interface Quotas {
  /** External jobs running at once; excess tasks wait as `pending`, excess dispatches wait. */
  max_concurrent_jobs?: number | null;
  /** Tasks submitted per UTC day; more get 429 with Retry-After. */
  tasks_per_day?: number | null;
  /** Provider tokens (usage.total_tokens) the tenant may spend in all. */
  token_budget?: number | null;
  /** Over budget: `park` new work until the budget is raised, or `reject` it. Default park. */
  budget_policy?: "park" | "reject";
  /** Submissions per second (per node), with a burst of twice that. */
  submit_rate_per_s?: number | null;
}

const counts = ["max_concurrent_jobs", "tasks_per_day", "token_budget"] as const;

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
    if (![...counts, "budget_policy", "submit_rate_per_s"].includes(key)) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `Unknown quota "${key}"; known: ${[...counts, "budget_policy", "submit_rate_per_s"].join(", ")}.`,
      );
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

export function overBudget(q: Quotas, tokensUsed: number): boolean {
  return q.token_budget != null && tokensUsed >= q.token_budget;
}
