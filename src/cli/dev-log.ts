import { Writable } from "node:stream";
import { clockTime } from "./dev-companion.ts";

// `longhaul dev`'s log, for a person at a terminal: each pino line as `14:03:07 WARN message
// key=value …` on one short line, so a warning reads beside the companion's lines instead of
// a JSON object. `serve` keeps pino's JSON lines, for log collectors.

const LEVELS: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};
/** pino's own fields, shown otherwise or not at all. */
const OWN = new Set(["level", "time", "pid", "hostname", "msg", "v"]);
const MAX_FIELD_CHARS = 200;

/** One pino JSON line as a readable one; text that is not JSON is kept as it is. */
export function prettyLogLine(json: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const level = LEVELS[o.level as number] ?? String(o.level);
  const fields = Object.entries(o)
    .filter(([k]) => !OWN.has(k))
    .map(([k, v]) => {
      const value =
        k === "err" && typeof v === "object" && v !== null ? String((v as { message?: unknown }).message) : v;
      const text = typeof value === "string" ? value : JSON.stringify(value);
      return `${k}=${text.length > MAX_FIELD_CHARS ? `${text.slice(0, MAX_FIELD_CHARS - 1)}…` : text}`;
    });
  const time = typeof o.time === "number" ? clockTime(o.time) : "";
  return [time, level.padEnd(5), String(o.msg ?? ""), ...fields].filter(Boolean).join(" ");
}

/** A destination for pino that writes each line pretty to `out`. */
export function prettyLogStream(out: NodeJS.WritableStream = process.stderr): Writable {
  let rest = "";
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const lines = (rest + chunk.toString("utf8")).split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) if (line) out.write(`${prettyLogLine(line)}\n`);
      done();
    },
  });
}
