import { SecretBox } from "../secrets/secret-box.ts";

/**
 * The Standard Webhooks schedule, in seconds: the first attempt at once, then retries 5 s,
 * 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h after each failure (about three days).
 */
export const STANDARD_RETRY_SCHEDULE_S = [0, 5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400];

/** How outbound webhooks are sent, as the engine and the API use it. */
export interface OutboundSettings {
  /** Delay before each attempt; entry 0 is the first attempt (sent at once), the last is the last retry. */
  retryScheduleMs: readonly number[];
  /** Allow loopback and private targets (development); link-local stays refused. */
  allowPrivateNetworks: boolean;
  /** How long one attempt may take before it counts as failed. */
  timeoutMs: number;
  /** Seals endpoint secrets when they are stored and opens them to sign (src/secrets/). */
  secrets: SecretBox;
}

/** The `outbound` option of the configuration (ARCHITECTURE §7). */
export interface OutboundConfig {
  retry_schedule_s?: number[];
  allow_private_networks?: boolean;
  timeout_s?: number;
}

/**
 * The `outbound` configuration with the defaults filled in. Its values are checked by the
 * settings schema (`OutboundSettings` in src/core/settings.ts) before they get here.
 */
export function outboundSettings(
  config: OutboundConfig = {},
  secrets: SecretBox = new SecretBox([]),
): OutboundSettings {
  const schedule = config.retry_schedule_s ?? STANDARD_RETRY_SCHEDULE_S;
  return {
    retryScheduleMs: schedule.map((s) => Math.round(s * 1000)),
    allowPrivateNetworks: config.allow_private_networks === true,
    timeoutMs: (config.timeout_s ?? 10) * 1000,
    secrets,
  };
}
