import { LonghaulError } from "./errors.ts";

/** A secret a rotation replaced, as stored (sealed when a key is set), and when it stops signing. */
export interface PreviousSecret {
  secret: string;
  expiresAt: number;
}

/**
 * The most replaced secrets that may sign at once, next to the current one: each adds a
 * signature to every delivery, and a receiver tries each against its secret.
 */
export const MAX_PREVIOUS_SECRETS = 5;

/** The previous secrets that still sign at `now`. */
export const liveSecrets = (previous: readonly PreviousSecret[], now: number): PreviousSecret[] =>
  previous.filter((p) => p.expiresAt > now);

/**
 * The previous secrets after a rotation at `now` that replaces `replaced`: it signs for
 * `overlapMs` more, next to those still unexpired (expired ones are dropped). A null overlap
 * stops every earlier secret at once, the answer to a leaked one. LIMIT_REACHED when
 * `MAX_PREVIOUS_SECRETS` still sign: shortening a window a receiver counts on is not done
 * silently.
 */
export function rotatedSecrets(
  endpointId: string,
  previous: readonly PreviousSecret[],
  replaced: string,
  now: number,
  overlapMs: number | null,
): PreviousSecret[] {
  if (overlapMs === null) return [];
  const live = liveSecrets(previous, now);
  if (live.length >= MAX_PREVIOUS_SECRETS) {
    const soonest = Math.min(...live.map((p) => p.expiresAt));
    throw new LonghaulError(
      "LIMIT_REACHED",
      `Webhook endpoint ${endpointId} already has ${live.length} earlier secrets still signing, the most there may be; rotate again after ${new Date(soonest).toISOString()}, when the first of them expires, or with expire_previous_in_s 0 to stop them all now.`,
    );
  }
  return [...live, { secret: replaced, expiresAt: now + overlapMs }];
}

/** Until when some previous secret still signs (the last expiry), or null when none is kept. */
export const previousSecretsEnd = (previous: readonly PreviousSecret[]): number | null =>
  previous.length === 0 ? null : Math.max(...previous.map((p) => p.expiresAt));
