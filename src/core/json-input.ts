import sjson from "secure-json-parse";
import { LonghaulError } from "./errors.ts";

/**
 * How deep objects and arrays may nest in JSON that arrives over HTTP. Deeper values overflow
 * the stack of anything that walks them recursively (`JSON.stringify` among them), so they are
 * refused before they are parsed.
 */
export const MAX_JSON_DEPTH = 100;

/** The outcome of reading request JSON: its value, or the error to answer with. */
export type JsonRead = { ok: true; value: unknown } | { ok: false; error: LonghaulError };

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether `text` nests objects and arrays deeper than `max`. One pass over the text with a
 * counter, never recursion, so the check cannot itself overflow. Strings are skipped with
 * `indexOf`, so brackets inside them do not count and long strings cost little. Text that is
 * not JSON may be misjudged, which is harmless: parsing refuses it anyway.
 */
export function nestsDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i + 1);
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

/**
 * The index of the quote that ends the string starting at `from`, or the end of the text. A
 * quote after an odd run of backslashes is escaped; each run is counted once, between the
 * previous quote and this one, so the whole walk stays linear.
 */
function closingQuote(text: string, from: number): number {
  let at = from;
  for (;;) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return text.length;
    let slashes = 0;
    while (quote - slashes - 1 >= at && text.charCodeAt(quote - slashes - 1) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

/** The error for JSON nested deeper than MAX_JSON_DEPTH. */
export function tooDeep(what = "The body"): LonghaulError {
  return new LonghaulError(
    "VALIDATION_FAILED",
    `${what} nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep; send at most ${MAX_JSON_DEPTH} levels.`,
  );
}

/**
 * Text that may hold a number beyond a double's range (±1.8e308): an exponent of three digits
 * or more, or 309 digits in a row. Only such text is walked for one.
 */
const HUGE_NUMBER = /[eE]\+?\d{3}|\d{309}/;

/** Whether a parsed value holds a number JSON.parse turned into ±Infinity. */
function holdsInfinity(v: unknown): boolean {
  if (typeof v === "number") return !Number.isFinite(v);
  if (v === null || typeof v !== "object") return false;
  for (const x of Array.isArray(v) ? v : Object.values(v)) if (holdsInfinity(x)) return true;
  return false;
}

/**
 * Parses JSON that came over HTTP the way the API parses every body: nesting capped at
 * MAX_JSON_DEPTH (VALIDATION_FAILED), and a `__proto__` key or a `constructor` key holding a
 * `prototype` refused (INVALID_JSON) so a parsed value can never reach an object's prototype.
 * With `finite`, a number beyond a double's range is refused (VALIDATION_FAILED) instead of
 * becoming Infinity, which would be stored as `null`: for what a client sends, not for a
 * provider's event or callback, whose sender cannot be told.
 */
export function readJson(text: string, what = "The body", opts: { finite?: boolean } = {}): JsonRead {
  if (nestsDeeperThan(text)) return { ok: false, error: tooDeep(what) };
  try {
    const value: unknown = sjson.parse(text, null, { protoAction: "error", constructorAction: "error" });
    if (opts.finite && HUGE_NUMBER.test(text) && holdsInfinity(value)) {
      return {
        ok: false,
        error: new LonghaulError(
          "VALIDATION_FAILED",
          `${what} holds a number beyond the range JSON numbers are stored in (±1.8e308); send it as a string.`,
        ),
      };
    }
    return { ok: true, value };
  } catch (err) {
    const poisoned = err instanceof SyntaxError && err.message.includes("forbidden prototype property");
    return {
      ok: false,
      error: new LonghaulError(
        "INVALID_JSON",
        poisoned
          ? `${what} has a "__proto__" key, or a "constructor" key holding "prototype"; these keys are refused.`
          : `${what} is not valid JSON.`,
      ),
    };
  }
}

/** `value` as the JSON text a store would keep, or what keeps it from having one. */
export type JsonText = { ok: true; text: string } | { ok: false; problem: string };

/**
 * `value` as JSON text, refusing what JSON.stringify cannot write (a BigInt, a cycle, a
 * `toJSON` that throws, nesting deep enough to overflow the stack) and what it would write as
 * something else: NaN and ±Infinity become `null`, and `undefined` writes nothing at all. The
 * problem names the key it was found under, in words fit after "its output".
 */
export function toJsonText(value: unknown): JsonText {
  let problem: string | null = null;
  const at = (key: string) => (key === "" ? "" : ` at key ${JSON.stringify(key)}`);
  const replacer = (key: string, v: unknown): unknown => {
    if (problem !== null) return undefined;
    if (typeof v === "bigint") problem = `holds a BigInt${at(key)}, which JSON cannot carry`;
    else if (typeof v === "number" && !Number.isFinite(v))
      problem = `holds ${v}${at(key)}, which JSON would store as null`;
    return problem === null ? v : undefined;
  };
  let text: string | undefined;
  try {
    text = JSON.stringify(value, replacer);
  } catch (err) {
    if (err instanceof RangeError) return { ok: false, problem: "nests too deeply to be written as JSON" };
    const message = err instanceof Error ? err.message : "";
    if (/circular/i.test(message)) return { ok: false, problem: "is circular (an object holds itself)" };
    return { ok: false, problem: `cannot be written as JSON (${describeThrown(err)})` };
  }
  if (problem !== null) return { ok: false, problem };
  if (text === undefined)
    return { ok: false, problem: "is undefined, or a function, which JSON cannot carry" };
  return { ok: true, text };
}

/**
 * A thrown value in one line of at most 200 characters: an error's name and message, never
 * its stack. Safe on anything thrown, however odd (a null-prototype object, a throwing getter).
 */
export function describeThrown(err: unknown): string {
  let s: string;
  try {
    s = err instanceof Error ? `${err.name}: ${err.message}` : typeof err === "string" ? err : String(err);
  } catch {
    s = `a value (${typeof err}) that cannot be shown as text`;
  }
  s = s.replace(/\s+/g, " ").trim();
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
