/**
 * Which task events an outbound endpoint wants: a list of event types (`task.succeeded`) and
 * prefixes (`task.*`, or `*` for all). No list means every event.
 */
export type EventFilter = readonly string[] | null;

/**
 * An event type (`task.failed`), a prefix ending in `.*` (`task.*`), or `*` for all. Linear on
 * any input: a dot separates the repeated parts. The wire schema validates with its source.
 */
export const EVENT_PATTERN = /^(\*|[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?)$/;
export const MAX_EVENT_PATTERNS = 50;

export function matchesEvent(filter: EventFilter, type: string): boolean {
  if (filter === null) return true;
  for (const p of filter) {
    if (p === type || p === "*") return true;
    if (p.endsWith(".*") && type.startsWith(p.slice(0, -1))) return true;
  }
  return false;
}
