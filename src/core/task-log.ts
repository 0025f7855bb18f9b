/** How loud a task's log line is. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * The `log` a task function is given. Lines are replay-aware: one is written once, not again
 * when the function is replayed on resume (ARCHITECTURE §4.4). Each shows in the task's
 * timeline as a `task.log` event and goes to the worker's log.
 */
export interface TaskLog {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** One new line of a run, stored as the data of a `task.log` event. */
export interface LogLine {
  level: LogLevel;
  message: string;
  /** The line's fields as JSON data, or null. */
  fields: Record<string, unknown> | null;
  /** How many step calls the run had made when the line was written (its place in replay). */
  stepPosition: number;
}

/** The most characters of one line's message and fields (as JSON) together; the rest is cut. */
export const MAX_LOG_LINE_CHARS = 4096;
/** The most lines one advance writes; the rest are dropped, and one line says so. */
export const MAX_LOG_LINES_PER_ADVANCE = 100;

/**
 * A line as it is stored: its fields made plain JSON data, and message and fields cut to
 * `MAX_LOG_LINE_CHARS` together, so task code cannot flood the event log.
 */
export function logLine(level: LogLevel, message: unknown, fields: unknown, stepPosition: number): LogLine {
  let text = typeof message === "string" ? message : String(message);
  if (text.length > MAX_LOG_LINE_CHARS) text = `${text.slice(0, MAX_LOG_LINE_CHARS - 1)}…`;
  let data: Record<string, unknown> | null = null;
  if (fields !== undefined && fields !== null) {
    let json: string | undefined;
    try {
      json = JSON.stringify(fields);
    } catch (err) {
      json = JSON.stringify({ unserializable: (err as Error).message });
    }
    if (json !== undefined && json !== "{}") {
      const room = MAX_LOG_LINE_CHARS - text.length;
      const parsed: unknown = JSON.parse(json);
      if (json.length > room) data = { truncated: `${json.slice(0, Math.max(0, room - 40))}…` };
      else if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
        data = parsed as Record<string, unknown>;
      } else data = { value: parsed };
    }
  }
  return { level, message: text, fields: data, stepPosition };
}
