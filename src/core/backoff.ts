/**
 * Exponential backoff with full jitter: attempt 1 waits up to `baseMs`, each next attempt
 * doubles the ceiling, capped at `maxMs`. `random` is injected so tests are exact.
 */
export function backoffMs(
  attempt: number,
  opts: { baseMs?: number; maxMs?: number; random?: () => number } = {},
): number {
  const base = opts.baseMs ?? 1000;
  const max = opts.maxMs ?? 10 * 60_000;
  const ceiling = Math.min(max, base * 2 ** Math.max(0, attempt - 1));
  const r = opts.random ?? Math.random;
  // Half fixed, half random: never zero, never a thundering herd.
  return Math.round(ceiling / 2 + r() * (ceiling / 2));
}

/**
 * How long a job waits after its provider rate-limited its creation for the `throttle`-th time
 * in a row (ARCHITECTURE §4.8). With the provider's `Retry-After`: that wait, plus a jitter of
 * up to a tenth of it (at most 1 s) so the parked jobs do not all return in the same instant.
 * Without: exponential backoff with full jitter, uniform in [0, min(maxMs, baseMs·2^(n-1))],
 * from 1 s up to 5 min. `random` is injected so tests are exact.
 */
export function throttleDelayMs(
  throttle: number,
  retryAfterMs: number | undefined,
  opts: { baseMs?: number; maxMs?: number; random?: (() => number) | undefined } = {},
): number {
  const r = opts.random ?? Math.random;
  if (retryAfterMs !== undefined) return Math.round(retryAfterMs + r() * Math.min(1000, retryAfterMs / 10));
  const ceiling = Math.min(opts.maxMs ?? 5 * 60_000, (opts.baseMs ?? 1000) * 2 ** Math.max(0, throttle - 1));
  return Math.round(r() * ceiling);
}
