/** Reads the demo types' optional `timeout_s` as a step timeout. */
export function optionalTimeout(input: { timeout_s?: number } | null): { timeout?: number } {
  const t = input?.timeout_s;
  if (t === undefined) return {};
  if (typeof t !== "number" || !Number.isFinite(t) || t <= 0 || t > 365 * 86_400) {
    throw new Error('"timeout_s" must be a positive number of seconds, up to a year');
  }
  return { timeout: Math.round(t * 1000) };
}
