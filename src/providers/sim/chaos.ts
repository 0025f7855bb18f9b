import { createHash } from "node:crypto";
import { LonghaulError } from "../../core/errors.ts";

/** Rates from 0 (never) to 1 (always), and an extra delay range per event. */
export interface ChaosOptions {
  /** Deliver the event twice, with the same `webhook-id`. */
  duplicate?: number;
  /** Hold `job.running` back until the job's terminal event has been sent. */
  reorder?: number;
  /** Never send the event; status polls still tell the truth. */
  drop?: number;
  /** Answer a creation with 503 and create nothing. */
  failCreate?: number;
  /**
   * Answer a creation with 429 `rate_limit_exceeded` and a `Retry-After` (`retryAfterS`), and
   * create nothing: a provider's rate limit (ARCHITECTURE §4.8).
   */
  throttleCreate?: number;
  /** Answer the first n creation attempts of each key with that 429, whatever the rate. */
  throttleFirstCreates?: number;
  /** The `Retry-After` of a `throttleCreate` answer, in seconds; default 7. */
  retryAfterS?: number;
  /** An extra delay before each event's first delivery, between these two bounds. */
  delayMs?: [number, number];
}

/** What happens to one event on its way out. */
export interface EventChaos {
  drop: boolean;
  duplicate: boolean;
  reorder: boolean;
  delayMs: number;
}

/**
 * A number in [0, 1) that depends only on its inputs. Every chaos decision is one roll of
 * (seed, idempotency key, what is decided), never a draw from a shared sequence, so the
 * order in which concurrent jobs arrive cannot change what happens to any one of them.
 */
export function chaosRoll(seed: number, ...parts: string[]): number {
  const digest = createHash("sha256")
    .update(JSON.stringify([seed, ...parts]))
    .digest();
  return digest.readUIntBE(0, 6) / 2 ** 48;
}

/** The fate of the event of `type` for the job created with `key`. */
export function eventChaos(seed: number, chaos: ChaosOptions, key: string, type: string): EventChaos {
  const [min, max] = chaos.delayMs ?? [0, 0];
  return {
    drop: chaosRoll(seed, key, type, "drop") < (chaos.drop ?? 0),
    duplicate: chaosRoll(seed, key, type, "duplicate") < (chaos.duplicate ?? 0),
    reorder: type === "job.running" && chaosRoll(seed, key, type, "reorder") < (chaos.reorder ?? 0),
    delayMs: Math.floor(min + chaosRoll(seed, key, type, "delay") * (max - min + 1)),
  };
}

/** Whether the `attempt`-th creation request (1-based) with `key` is answered 503. */
export function failsCreate(seed: number, chaos: ChaosOptions, key: string, attempt: number): boolean {
  return chaosRoll(seed, key, String(attempt), "failCreate") < (chaos.failCreate ?? 0);
}

/** Whether the `attempt`-th creation request (1-based) with `key` is answered 429. */
export function throttlesCreate(seed: number, chaos: ChaosOptions, key: string, attempt: number): boolean {
  if (attempt <= (chaos.throttleFirstCreates ?? 0)) return true;
  return chaosRoll(seed, key, String(attempt), "throttleCreate") < (chaos.throttleCreate ?? 0);
}

/** Throws `CONFIG_INVALID` unless every rate is in [0, 1] and the delay range is ordered. */
export function checkChaos(chaos: ChaosOptions): void {
  for (const name of ["retryAfterS", "throttleFirstCreates"] as const) {
    const n = chaos[name];
    if (n !== undefined && !(Number.isSafeInteger(n) && n >= 0)) {
      throw new LonghaulError("CONFIG_INVALID", `chaos.${name} is a whole number, 0 or more; got ${n}.`);
    }
  }
  for (const name of ["duplicate", "reorder", "drop", "failCreate", "throttleCreate"] as const) {
    const rate = chaos[name];
    if (rate !== undefined && !(rate >= 0 && rate <= 1)) {
      throw new LonghaulError("CONFIG_INVALID", `chaos.${name} is a rate from 0 to 1; got ${rate}.`);
    }
  }
  if (chaos.delayMs !== undefined) {
    const [min, max] = chaos.delayMs;
    if (!(Number.isFinite(min) && Number.isFinite(max) && min >= 0 && max >= min)) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `chaos.delayMs is [min, max] with 0 <= min <= max; got [${min}, ${max}].`,
      );
    }
  }
}
