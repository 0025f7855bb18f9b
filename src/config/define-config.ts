import type { LimitsConfig } from "../core/limits.ts";
import type { NotifyTarget } from "../core/notification.ts";
import type { StorageUrlsConfig } from "../core/storage-urls.ts";
import type { TaskType } from "../core/task-type.ts";
import type { SourceConfig } from "../ingress/sources.ts";
import type { NotifyConfig } from "../notify/settings.ts";
import type { OutboundConfig } from "../outbound/settings.ts";
import type { ProviderConfig } from "../providers/from-config.ts";
import type { Provider } from "../providers/provider.ts";
import type { TokenKey } from "../tokens/keyring.ts";

/**
 * The configuration file (ARCHITECTURE §7): `.ts`, `.js`, `.mjs` (default export) or `.json`.
 * Keys are public: added, never renamed; an unknown one, or a value out of its range (the schema
 * and ranges are in src/core/settings.ts), stops the start (`checkConfig`).
 */
export interface LonghaulConfig {
  sources?: Record<string, SourceConfig>;
  /**
   * Provider adapters by name, e.g. `{ "sim": { "base_url": "http://127.0.0.1:8788" },
   * "openai": { "api_key_env": "OPENAI_API_KEY" } }` (see src/providers/from-config.ts), or
   * a `Provider` object of your own under its name.
   */
  providers?: Record<string, ProviderConfig | Provider>;
  /** Capability token keys (first signs, all verify) and the default link lifetime. */
  tokens?: { keys?: TokenKey[]; ttl_s?: number };
  public_url?: string;
  /** A job with no terminal webhook after this long is polled through its provider. Default 60. */
  reconciler?: { poll_after_s?: number };
  /** A `step.job` or `step.waitForEvent` without a timeout ends after this long. Default 604800 (7 days). */
  waits?: { default_timeout_s?: number };
  /** How long delivered event ids are remembered for dedupe. Default 7 days. */
  inbox?: { dedupe_horizon_s?: number };
  /** Outbound webhooks: retry schedule in seconds, and whether private and loopback targets are allowed. */
  outbound?: OutboundConfig;
  /**
   * How approvals' messages leave: `smtp` (host, port, secure, user, pass, from), `slack`
   * (bot_token, signing_secrets, users, api_url), `webhook_secret` (`whsec_…`, signs webhook channels).
   */
  notify?: NotifyConfig;
  /**
   * Channels by name, e.g. `{ "finance": { "channel": "email", "to": "finance@example.com" } }`,
   * for an approval's `notify: ["finance"]`: webhook URLs and secrets stay out of task input.
   */
  notifiers?: Record<string, NotifyTarget>;
  /**
   * Rates per minute (`api_reads_per_min`, `api_writes_per_min`, the deprecated `api_per_min`, `unauthenticated_per_min`, `hooks_per_min`,
   * `callbacks_per_min`, `approvals_per_min`; 0 turns one off), caps per tenant
   * (`sse_streams_per_tenant`, `webhook_endpoints_per_tenant`) and `signal_retention_s`.
   */
  limits?: LimitsConfig;
  /**
   * `GET /metrics`: behind the admin key on the API address by default (off without one);
   * `listen` ("127.0.0.1:9464") serves it without a key on an address of its own; `public: true`
   * opens it on the API address.
   */
  metrics?: { listen?: string; public?: boolean };
  /**
   * How task code reads `{"url": …}` references: credentials for `s3://` and `gs://` (an HMAC
   * key of Cloud Storage's S3-compatible API), and `timeout_s`, how long a read may go without
   * a byte (default 30). `https://` needs none.
   */
  storage_urls?: StorageUrlsConfig;
  taskTypes?: TaskType[];
  /** The same as `taskTypes`; both may be given. */
  tasks?: TaskType[];
}

/** Types a configuration file (`export default defineConfig({...})`); returns it as it is. */
export function defineConfig(config: LonghaulConfig): LonghaulConfig {
  return config;
}
