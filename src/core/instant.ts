import { LonghaulError } from "./errors.ts";

/**
 * A date (`2026-03-01`, midnight UTC) or a date-time with its offset (`2026-03-01T12:00:00Z`,
 * `…+02:00`, fractions of a second allowed). A date-time without an offset is refused: it would
 * mean the server's own time zone.
 */
const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/** An ISO 8601 time a client sent, as ms since the epoch; VALIDATION_FAILED naming `field` otherwise. */
export function parseInstant(field: string, value: string): number {
  const m = ISO_8601.exec(value);
  const ms = m ? Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value) : Number.NaN;
  // Date.parse rolls some impossible dates over (`02-30`); the fields must survive the round trip.
  const day =
    Number.isFinite(ms) && m && value.length === 10 ? new Date(ms).toISOString().slice(0, 10) : null;
  if (!m || !Number.isFinite(ms) || (day !== null && day !== value)) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `"${field}" must be an ISO 8601 date or date-time with its offset, such as 2026-03-01 or 2026-03-01T12:00:00Z; got "${value.slice(0, 64)}".`,
    );
  }
  return ms;
}
