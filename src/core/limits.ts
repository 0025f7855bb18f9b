/**
 * Limits that protect a deployment from one tenant or one address (the `limits` block of the
 * config file). Rates are requests per minute in a fixed one-minute window, counted by each
 * node on its own; `0` turns a limit off.
 */
export interface LimitsConfig {
  /**
   * API reads (`GET`) per tenant, keyed on the tenant its key or read token resolves to.
   * Default 240000: 3000 tasks polled once a second is 180000 a minute.
   */
  api_reads_per_min?: number;
  /** API writes (every other method) per tenant. Default 12000: 5000 submits in one minute, with room. */
  api_writes_per_min?: number;
  /**
   * @deprecated Counted reads and writes alike, in one count. Now the value of each of
   * `api_reads_per_min` and `api_writes_per_min` that is not given, each counted apart.
   */
  api_per_min?: number;
  /** API requests whose key is missing or unknown, per client address. Default 300. */
  unauthenticated_per_min?: number;
  /** `POST /hooks/:source` per source and client address. Default 60000. */
  hooks_per_min?: number;
  /** `POST /v1/callbacks/:token` per client address. Default 6000. */
  callbacks_per_min?: number;
  /** `GET`/`POST /v1/approvals/:token` per client address. Default 600. */
  approvals_per_min?: number;
  /** Open `GET /v1/events` streams per tenant on one node. Default 100. */
  sse_streams_per_tenant?: number;
  /** Webhook endpoints a tenant may have. Default 20. */
  webhook_endpoints_per_tenant?: number;
  /** Signals older than this are pruned by the maintenance pass. Default 7 days. */
  signal_retention_s?: number;
  /** How long a task type's schema may take to check a submitted input. Default 5 s. */
  schema_timeout_s?: number;
  /** The largest file `POST /v1/files` accepts, in bytes. Default 1 GiB; 0 lifts the cap. */
  file_max_bytes?: number;
  /**
   * The bytes a tenant's files may take in all, checked at upload (`413 STORAGE_QUOTA_EXCEEDED`).
   * A tenant's `quotas.storage_quota_bytes` overrides it. Default 10 GiB; 0 lifts the cap.
   */
  storage_quota_bytes?: number;
  /**
   * A task's input or output, or a step's result, whose JSON is longer than this many bytes is
   * kept in the blob store and its row holds a reference (ARCHITECTURE §4.10). Default 256 KiB;
   * 0 keeps every value in its row.
   */
  inline_max_bytes?: number;
  /**
   * How many bytes of values kept in the blob store `GET /v1/tasks/:id` answers inline; past
   * them a value is answered as a signed, expiring `<field>_url`. Default 1 MiB; 0: always a URL.
   */
  inline_response_max_bytes?: number;
  /** The largest body `POST /v1/tasks` accepts, in bytes. Default 32 MiB; 0 lifts the cap. */
  submit_max_bytes?: number;
}

/** The limits in force: every key given a value, the deprecated `api_per_min` only when it was set. */
export type Limits = Required<Omit<LimitsConfig, "api_per_min">> & Pick<LimitsConfig, "api_per_min">;

export const DEFAULT_LIMITS: Limits = {
  api_reads_per_min: 240_000,
  api_writes_per_min: 12_000,
  unauthenticated_per_min: 300,
  hooks_per_min: 60_000,
  callbacks_per_min: 6000,
  approvals_per_min: 600,
  sse_streams_per_tenant: 100,
  webhook_endpoints_per_tenant: 20,
  signal_retention_s: 7 * 86_400,
  schema_timeout_s: 5,
  file_max_bytes: 1024 ** 3,
  storage_quota_bytes: 10 * 1024 ** 3,
  inline_max_bytes: 256 * 1024,
  inline_response_max_bytes: 1024 ** 2,
  submit_max_bytes: 32 * 1024 ** 2,
};

/**
 * The limits with defaults filled in. The values are checked by the settings schema
 * (`LimitsSettings` in settings.ts) before they get here.
 */
export function resolveLimits(value: LimitsConfig | undefined): Limits {
  const out: Limits = { ...DEFAULT_LIMITS };
  for (const [key, v] of Object.entries(value ?? {})) {
    if (v !== undefined) out[key as keyof Limits] = v;
  }
  const alias = value?.api_per_min;
  if (alias !== undefined) {
    if (value?.api_reads_per_min === undefined) out.api_reads_per_min = alias;
    if (value?.api_writes_per_min === undefined) out.api_writes_per_min = alias;
  }
  return out;
}
