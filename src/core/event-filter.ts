/**
 * Which task events an outbound endpoint wants: a list of event types (`task.succeeded`) and
 * prefixes (`task.*`, or `*` for all). No list means every event.
 */
export type EventFilter = readonly string[] | null;

const PATTERN = /^(\*|[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?)$/;
export const MAX_EVENT_PATTERNS = 50;

export function matchesEvent(filter: EventFilter, type: string): boolean {
  if (filter === null) return true;
  for (const p of filter) {
    if (p === type || p === "*") return true;
    if (p.endsWith(".*") && type.startsWith(p.slice(0, -1))) return true;
  }
  return false;
}

/** A reason the filter is unusable, or null when it is fine. */
export function eventFilterProblem(value: unknown): string | null {
  if (!Array.isArray(value))
    return '"events" must be a list of event types such as ["task.succeeded", "step.*"].';
  if (value.length === 0)
    return '"events" must name at least one event type; leave it out to receive every event.';
  if (value.length > MAX_EVENT_PATTERNS) return `"events" holds at most ${MAX_EVENT_PATTERNS} entries.`;
  for (const p of value) {
    if (typeof p !== "string" || p.length > 100 || !PATTERN.test(p)) {
      return `"events" entry ${JSON.stringify(p)} is not an event type ("task.failed") or a prefix ending in ".*" ("task.*").`;
    }
  }
  return null;
}
