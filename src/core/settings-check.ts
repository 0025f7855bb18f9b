import type { TSchema } from "typebox";
// TypeBox's schema checker alone: its compiler and value modules wait for the first request
// (src/http/validator.ts), and this is all a start needs.
import { Errors } from "typebox/schema";
import { LonghaulError } from "./errors.ts";

/** Where the values being checked came from, so a message can say where to fix one. */
export interface SettingsSource {
  /** What the whole is called when it is not an object: "the config", "the options". */
  name?: string;
  /** Where a key's value came from, shown in parentheses: a variable, a file. None: nothing. */
  origin?: (key: string) => string | undefined;
  /** The text a key was given as (a variable's), shown as it was instead of the parsed value. */
  text?: (key: string) => string | undefined;
  /** Where an unknown key was found, for its message: "in longhaul.config.ts". */
  place?: string;
}

interface Node {
  type?: string;
  description?: string;
  redact?: "url" | "length" | "keys";
  properties?: Record<string, Node>;
}

/**
 * Checks `value` against a settings schema (src/core/settings.ts); CONFIG_INVALID naming every
 * bad key once: what it must be, where it came from and what it was (`waits.default_timeout_s
 * must be a whole number of seconds from 1 to 31536000 (LONGHAUL_WAITS_DEFAULT_TIMEOUT_S);
 * got 1e30.`), or, for a key the schema does not know, the keys it does.
 */
export function checkSettings(schema: TSchema, value: unknown, source: SettingsSource = {}): void {
  const [ok, errors] = Errors(schema, value);
  if (ok) return;
  const problems = new Map<string, string>();
  for (const error of errors) {
    const path = error.instancePath.split("/").slice(1).map(unescapePointer);
    if (error.keyword === "additionalProperties") continue; // Named by its "boolean" error.
    if (error.keyword === "boolean" && error.schemaPath.endsWith("/additionalProperties")) {
      const key = path.join(".");
      if (!problems.has(key)) problems.set(key, unknownKey(schema as Node, path, source.place));
      continue;
    }
    const { key, node } = named(schema as Node, path);
    if (problems.has(key)) continue;
    const origin = key === "" ? undefined : source.origin?.(key);
    const text = source.text?.(key);
    const given = shown(text ?? valueAt(value, key), node, text !== undefined);
    const rule = node.description ?? error.message;
    problems.set(
      key,
      `${key || (source.name ?? "the settings")} must be ${rule}${origin ? ` (${origin})` : ""}; got ${given}.`,
    );
  }
  throw new LonghaulError("CONFIG_INVALID", [...problems.values()].join(" "));
}

/** The key an error is named by, and its schema: a list is named as a whole, not by entry. */
function named(schema: Node, path: string[]): { key: string; node: Node } {
  let node = schema;
  const key: string[] = [];
  for (const segment of path) {
    const next = node.type === "object" ? node.properties?.[segment] : undefined;
    if (!next) break;
    node = next;
    key.push(segment);
  }
  return { key: key.join("."), node };
}

function unknownKey(schema: Node, path: string[], place: string | undefined): string {
  const parent = path.slice(0, -1);
  const known = Object.keys(named(schema, parent).node.properties ?? {}).join(", ");
  const where = place ? ` ${place}` : "";
  return parent.length === 0
    ? `Unknown key "${path.join(".")}"${where}; known keys: ${known}.`
    : `Unknown key "${path.join(".")}"${where}; known keys of "${parent.join(".")}": ${known}.`;
}

function valueAt(value: unknown, key: string): unknown {
  if (key === "") return value;
  let v = value;
  for (const segment of key.split(".")) v = (v as Record<string, unknown> | undefined)?.[segment];
  return v;
}

/**
 * A value as a message shows it: short, without what a secret setting holds, and a variable's
 * text (`raw`) as it was written.
 */
function shown(v: unknown, node: Node, raw: boolean): string {
  if (node.redact === "length" && typeof v === "string") return `a value of ${v.length} characters`;
  // An object that holds a secret among its keys: its keys alone.
  if (node.redact === "keys" && typeof v === "object" && v !== null && !Array.isArray(v)) {
    return `an object with the keys ${Object.keys(v).join(", ") || "none"}`;
  }
  if (node.redact === "url" && typeof v === "string") v = v.replace(/\/\/[^/?#]*@/, "//[redacted]@");
  let text: string;
  if (typeof v === "string") text = raw ? v : JSON.stringify(v);
  else if (typeof v === "object" && v !== null) {
    try {
      text = JSON.stringify(v) ?? String(v);
    } catch {
      text = "an object that is not JSON";
    }
  } else text = String(v);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}

const unescapePointer = (s: string) => s.replaceAll("~1", "/").replaceAll("~0", "~");
