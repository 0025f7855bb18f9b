import { LonghaulError } from "../core/errors.ts";

/**
 * What templates read: the graph's `input`, and the outputs of finished nodes keyed by node
 * id (the same map as the graph's output `nodes`).
 */
export interface TemplateScope {
  input: unknown;
  nodes: Record<string, unknown>;
}

/** A parsed reference: `input.a.b`, or `nodes.<id>.output.a.b` (keys are what follows `output`). */
export type TemplatePath =
  | { root: "input"; keys: string[]; text: string }
  | { root: "nodes"; node: string; keys: string[]; text: string };

/** A string split into literal text and references, in order. */
export type TemplatePart = string | TemplatePath;

// Anchored at both ends over one character class: linear in the length of the segment.
const SEGMENT = /^[A-Za-z0-9_-]+$/;
/** The longest `when` condition accepted, in characters. */
export const MAX_WHEN_LENGTH = 1024;
/** The longest reference accepted between `{{` and `}}`, in characters. */
export const MAX_PATH_LENGTH = 1024;
/**
 * The most references a graph may hold, in all its strings together. Each costs a parse at
 * submit and a lookup when its node starts, so the work a graph can ask for stays bounded.
 */
export const MAX_REFERENCES = 1000;
const WHEN_FORMS =
  'write "{{ path }}", or "{{ path }} == literal" or "{{ path }} != literal" where the literal is true, false, null, a number or a "double-quoted string"';

function invalid(message: string): LonghaulError {
  return new LonghaulError("VALIDATION_FAILED", message);
}

/** The error for a graph, or a string, holding more than MAX_REFERENCES references. */
export function tooManyReferences(): LonghaulError {
  return invalid(
    `a graph holds at most ${MAX_REFERENCES} "{{ … }}" references in all; pass large data as one reference to an object instead.`,
  );
}

/** Long text quoted in a message is cut short, so an error never echoes a whole body back. */
function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Parses the text between `{{` and `}}`. Throws VALIDATION_FAILED naming what is wrong. */
export function parsePath(raw: string): TemplatePath {
  if (raw.length > MAX_PATH_LENGTH) {
    throw invalid(
      `"{{ ${clip(raw.trim())} }}" is ${raw.length} characters long; a reference is at most ${MAX_PATH_LENGTH}.`,
    );
  }
  const text = raw.trim();
  const keys = text.split(".");
  if (text === "" || !keys.every((k) => SEGMENT.test(k))) {
    throw invalid(
      `"{{ ${text} }}" is not a path: use dot-separated names of letters, digits, "_" and "-", such as "{{ input.document.url }}" or "{{ nodes.ocr.output.text }}".`,
    );
  }
  const [root, ...rest] = keys;
  if (root === "input") return { root: "input", keys: rest, text };
  if (root === "nodes") {
    const [node, output, ...fields] = rest;
    if (node === undefined || output !== "output") {
      const id = node ?? "<id>";
      throw invalid(
        `"{{ ${text} }}" does not name a node output: write "{{ nodes.${id}.output }}" or "{{ nodes.${id}.output.<field> }}".`,
      );
    }
    return { root: "nodes", node, keys: fields, text };
  }
  throw invalid(`"{{ ${text} }}" starts with "${root}"; a path starts with "input" or "nodes".`);
}

/**
 * Splits a string into literal text and references. Throws VALIDATION_FAILED on a malformed
 * `{{ … }}`, or when the string holds more than `maxReferences` references.
 */
export function parseTemplate(s: string, maxReferences: number = MAX_REFERENCES): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let at = 0;
  let references = 0;
  for (;;) {
    const open = s.indexOf("{{", at);
    if (open < 0) break;
    if (++references > maxReferences) throw tooManyReferences();
    const close = s.indexOf("}}", open + 2);
    if (close < 0) throw invalid(`"${clip(s)}" opens "{{" without a closing "}}".`);
    if (open > at) parts.push(s.slice(at, open));
    parts.push(parsePath(s.slice(open + 2, close)));
    at = close + 2;
  }
  if (at < s.length) parts.push(s.slice(at));
  return parts;
}

/** The value at `path`, or `undefined` when any step of it is missing. */
export function lookup(path: TemplatePath, scope: TemplateScope): unknown {
  let current: unknown;
  if (path.root === "input") current = scope.input;
  else if (Object.hasOwn(scope.nodes, path.node)) current = scope.nodes[path.node];
  else return undefined;
  for (const key of path.keys) {
    current = child(current, key);
    if (current === undefined) return undefined;
  }
  return current;
}

// Own properties only: a path such as `input.constructor` must not reach the prototype.
function child(value: unknown, key: string): unknown {
  // Anchored over one character class: linear; keys are path segments, at most MAX_PATH_LENGTH.
  if (Array.isArray(value)) return /^\d+$/.test(key) ? value[Number(key)] : undefined;
  if (typeof value === "object" && value !== null && Object.hasOwn(value, key)) {
    return (value as Record<string, unknown>)[key];
  }
  return undefined;
}

/** How a value reads inside text: strings as they are, a missing value as "", anything else as JSON. */
function asText(value: unknown): string {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

function resolveString(s: string, scope: TemplateScope): unknown {
  if (!s.includes("{{")) return s;
  const parts = parseTemplate(s);
  const [only] = parts;
  if (parts.length === 1 && only !== undefined && typeof only !== "string") return lookup(only, scope);
  return parts.map((p) => (typeof p === "string" ? p : asText(lookup(p, scope)))).join("");
}

/**
 * Deep-walks `value` and resolves every string in it. A string that is exactly `{{ path }}`
 * becomes the value at that path with its type kept (object, number, …), or `undefined` when
 * the path is missing. A string with references among other text gets them interpolated.
 * Substituted values are not scanned again, so text coming from input or outputs is never
 * read as a template.
 */
export function resolveTemplate(value: unknown, scope: TemplateScope): unknown {
  if (typeof value === "string") return resolveString(value, scope);
  if (Array.isArray(value)) return value.map((v) => resolveTemplate(v, scope));
  if (typeof value === "object" && value !== null) {
    // fromEntries defines own properties, so a "__proto__" key stays a plain key.
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveTemplate(v, scope)]));
  }
  return value;
}

/** A parsed `when`: a reference, optionally compared with a literal. */
export interface WhenCondition {
  path: TemplatePath;
  compare: { op: "==" | "!="; literal: string | number | boolean | null } | null;
}

/**
 * Parses a `when` expression. Throws VALIDATION_FAILED for anything but the two supported
 * forms, or for an expression longer than MAX_WHEN_LENGTH. A scanner rather than a regular
 * expression: each character is looked at a bounded number of times, whatever the input.
 */
export function parseWhen(expr: string): WhenCondition {
  if (expr.length > MAX_WHEN_LENGTH) {
    throw invalid(
      `"when" is ${expr.length} characters long; a condition is at most ${MAX_WHEN_LENGTH} characters.`,
    );
  }
  const notCondition = () => invalid(`"when": "${expr}" is not a condition; ${WHEN_FORMS}.`);
  const text = expr.trim();
  if (!text.startsWith("{{")) throw notCondition();
  const close = text.indexOf("}}", 2);
  if (close < 0) throw notCondition();
  const inner = text.slice(2, close);
  if (inner.includes("{") || inner.includes("}")) throw notCondition();
  const path = parsePath(inner);
  const rest = text.slice(close + 2).trimStart();
  if (rest === "") return { path, compare: null };
  const op = rest.slice(0, 2);
  if (op !== "==" && op !== "!=") throw notCondition();
  const source = rest.slice(2).trim();
  let literal: unknown;
  try {
    literal = JSON.parse(source);
  } catch {
    literal = undefined;
  }
  if (literal === undefined || (typeof literal === "object" && literal !== null)) {
    throw invalid(`"when": "${source}" in "${expr}" is not a literal; ${WHEN_FORMS}.`);
  }
  return { path, compare: { op, literal: literal as string | number | boolean | null } };
}

/**
 * Decides whether a node runs. `{{ path }}` runs it when the value is truthy (false, null,
 * missing, 0 and "" are not); `{{ path }} == literal` and `!=` compare strictly, with a
 * missing value equal to null.
 */
export function evaluateWhen(expr: string, scope: TemplateScope): boolean {
  const { path, compare } = parseWhen(expr);
  const value = lookup(path, scope);
  if (compare === null) return Boolean(value);
  const equal = (value ?? null) === compare.literal;
  return compare.op === "==" ? equal : !equal;
}
