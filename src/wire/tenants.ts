import { Type } from "typebox";
import { Json, Nullable, Timestamp } from "./common.ts";

/**
 * A tenant's name: 1 to 200 characters, not only spaces, no NUL. The pattern cannot backtrack
 * (spaces, one character that is neither a space nor NUL, then anything but NUL), so a long
 * body of spaces is refused in linear time.
 */
const Name = Type.String({ maxLength: 200, pattern: "^\\s*[^\\s\\u0000][^\\u0000]*$" });

/**
 * Quotas as sent: checked by the quota rules themselves, which name the quota at fault and
 * know which keys exist.
 */
const QuotasIn = Type.Optional(Json);

export const TenantBody = Type.Object({ name: Name, quotas: QuotasIn });
export const TenantPatch = Type.Object({ name: Type.Optional(Name), quotas: QuotasIn });

export const Quotas = Type.Object(
  {
    max_concurrent_jobs: Type.Optional(Nullable(Type.Integer())),
    tasks_per_day: Type.Optional(Nullable(Type.Integer())),
    token_budget: Type.Optional(Nullable(Type.Integer())),
    budget_period: Type.Optional(Type.Enum(["day", "month"])),
    budget_policy: Type.Optional(Type.Enum(["park", "reject"])),
    submit_rate_per_s: Type.Optional(Nullable(Type.Number())),
  },
  { additionalProperties: true },
);

/** The token budget's current period: what it counts, what running jobs hold, when it began. */
export const Budget = Type.Object({
  token_budget: Nullable(Type.Integer()),
  period: Type.Enum(["day", "month"]),
  period_start: Type.String({ description: "The period's first UTC day, YYYY-MM-DD" }),
  tokens_used: Type.Integer(),
  tokens_reserved: Type.Integer(),
});

export const Tenant = Type.Object({
  tenant_id: Type.String(),
  name: Type.String(),
  quotas: Quotas,
  tokens_used: Type.Integer(),
  budget: Budget,
  created_at: Timestamp,
});

export const TenantWithKey = Type.Object({ ...Tenant.properties, api_key: Type.String() });

export const ApiKey = Type.Object({
  key_id: Type.String(),
  hint: Nullable(Type.String()),
  created_at: Timestamp,
  revoked_at: Nullable(Timestamp),
});

export const TenantWithKeys = Type.Object({ ...Tenant.properties, keys: Type.Array(ApiKey) });

export const NewApiKey = Type.Object({ key_id: Type.String(), api_key: Type.String() });

export const KeyParams = Type.Object({ id: Type.String(), keyId: Type.String() });

export const UsageQuery = Type.Object({
  days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, description: "1 to 366, default 30" })),
});

export const Usage = Type.Object({
  tenant_id: Type.String(),
  quotas: Quotas,
  tasks: Type.Record(Type.String(), Type.Integer()),
  jobs_running: Type.Integer(),
  tokens_used: Type.Integer(),
  budget: Budget,
  days: Type.Array(
    Type.Object({
      day: Type.String(),
      tasks_submitted: Type.Integer(),
      jobs_created: Type.Integer(),
      jobs_failed: Type.Integer(),
      tokens: Type.Integer(),
    }),
  ),
  recent_job_failures: Type.Array(
    Type.Object({
      job_id: Nullable(Type.String()),
      provider: Type.String(),
      task_id: Type.String(),
      step_id: Type.String(),
      error: Json,
      at: Timestamp,
    }),
  ),
});
