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
 * Whether `text` nests objects and arrays deeper than `max`. One pass over the characters with
 * a counter, never recursion, so the check cannot itself overflow; brackets inside strings are
 * skipped. Text that is not JSON may be misjudged, which is harmless: parsing refuses it anyway.
 */
export function nestsDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

/** The error for JSON nested deeper than MAX_JSON_DEPTH. */
export function tooDeep(what = "The body"): LonghaulError {
  return new LonghaulError(
    "VALIDATION_FAILED",
    `${what} nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep; send at most ${MAX_JSON_DEPTH} levels.`,
  );
}

/**
 * Parses JSON that came over HTTP the way the API parses every body: nesting capped at
 * MAX_JSON_DEPTH (VALIDATION_FAILED), and a `__proto__` key or a `constructor` key holding a
 * `prototype` refused (INVALID_JSON) so a parsed value can never reach an object's prototype.
 */
export function readJson(text: string, what = "The body"): JsonRead {
  if (nestsDeeperThan(text)) return { ok: false, error: tooDeep(what) };
  try {
    return { ok: true, value: sjson.parse(text, null, { protoAction: "error", constructorAction: "error" }) };
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
