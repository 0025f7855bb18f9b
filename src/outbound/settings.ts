import { LonghaulError } from "../core/errors.ts";
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

const MAX_ATTEMPTS = 50;

/** Checks the `outbound` configuration and fills in the defaults. CONFIG_INVALID. */
export function outboundSettings(
  config: OutboundConfig = {},
  secrets: SecretBox = new SecretBox([]),
): OutboundSettings {
  const schedule = config.retry_schedule_s ?? STANDARD_RETRY_SCHEDULE_S;
  if (
    !Array.isArray(schedule) ||
    schedule.length === 0 ||
    schedule.length > MAX_ATTEMPTS ||
    schedule.some((s) => typeof s !== "number" || !Number.isFinite(s) || s < 0)
  ) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `outbound.retry_schedule_s must list 1 to ${MAX_ATTEMPTS} delays in seconds, each 0 or more, such as [0, 5, 300].`,
    );
  }
  if (schedule[0] !== 0) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      "outbound.retry_schedule_s starts with the first attempt, which is sent as soon as the event commits: make its first entry 0.",
    );
  }
  const timeout = config.timeout_s ?? 10;
  if (typeof timeout !== "number" || !(timeout > 0) || timeout > 120) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      "outbound.timeout_s must be a number of seconds above 0 and at most 120.",
    );
  }
  return {
    retryScheduleMs: schedule.map((s) => Math.round(s * 1000)),
    allowPrivateNetworks: config.allow_private_networks === true,
    timeoutMs: timeout * 1000,
    secrets,
  };
}
