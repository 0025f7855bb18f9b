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
