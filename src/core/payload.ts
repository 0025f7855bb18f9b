import { createHash } from "node:crypto";

/*
 * Large payloads (ARCHITECTURE §4.10): a task's input or output, or a step's result, whose JSON
 * is longer than `limits.inline_max_bytes` is kept in the blob store, and its row holds a small
 * reference in its place. This module is what a stored value is: the value itself, the
 * reference, or a user's value that looks like either, wrapped so it is never taken for one.
 */

/** The only key of a stored reference: `{"$longhaul_payload": {"sha256", "size"}}`. */
export const PAYLOAD_KEY = "$longhaul_payload";
/** The only key of a user's value kept inline that would otherwise read as a reference. */
export const ESCAPE_KEY = "$longhaul_escaped";

/** Where the bytes are: the SHA-256 (hex) and length of the value's JSON text. */
export interface PayloadRef {
  sha256: string;
  size: number;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** The object's only key, or null for anything else. */
function soleKey(v: unknown): string | null {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const keys = Object.keys(v);
  return keys.length === 1 ? keys[0]! : null;
}

/** The reference a stored value is, or null when it is a value kept inline. */
export function payloadRef(stored: unknown): PayloadRef | null {
  if (soleKey(stored) !== PAYLOAD_KEY) return null;
  const r = (stored as Record<string, unknown>)[PAYLOAD_KEY] as Partial<PayloadRef> | null;
  if (typeof r !== "object" || r === null) return null;
  if (typeof r.sha256 !== "string" || !HEX64.test(r.sha256)) return null;
  if (typeof r.size !== "number" || !Number.isSafeInteger(r.size) || r.size < 0) return null;
  return { sha256: r.sha256, size: r.size };
}

/** What a row holds for a value kept in the blob store. */
export function storedRef(ref: PayloadRef): Record<string, PayloadRef> {
  return { [PAYLOAD_KEY]: { sha256: ref.sha256, size: ref.size } };
}

/**
 * A value as a row keeps it inline: itself, or, when it is an object whose only key is one of
 * the two this module reserves, wrapped under `ESCAPE_KEY`, so reading it back answers the
 * value and never a blob. Every write of a value a caller or a provider sent goes through this.
 */
export function inlineStored(value: unknown): unknown {
  const k = soleKey(value);
  return k === PAYLOAD_KEY || k === ESCAPE_KEY ? { [ESCAPE_KEY]: value } : value;
}

/** A value kept inline, unwrapped; a reference is answered as it is (`payloadRef` tells it). */
export function inlineValue(stored: unknown): unknown {
  return soleKey(stored) === ESCAPE_KEY ? (stored as Record<string, unknown>)[ESCAPE_KEY] : stored;
}

/** The blob key of a tenant's payload: named by its SHA-256, so the same value is one blob. */
export function payloadBlobKey(tenantId: string, sha256: string): string {
  return `payloads/${tenantId}/${sha256}`;
}

/** The hex SHA-256 of bytes or text. */
export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * Whether two stored values (as JSON text) hold the same value: the same text, or the same
 * SHA-256 whichever way each is kept (a threshold changed between two submits of one input).
 */
export function sameStored(a: string, b: string): boolean {
  return a === b || digestOf(a) === digestOf(b);
}

function digestOf(text: string): string {
  const stored: unknown = JSON.parse(text);
  const ref = payloadRef(stored);
  return ref ? ref.sha256 : sha256Hex(JSON.stringify(inlineValue(stored)));
}

/**
 * A stored value as an event carries it: the value, or, for one in the blob store, `null` and
 * `<name>_ref` (its size and SHA-256), so an event never carries megabytes; the task's view
 * (`GET /v1/tasks/:id`) answers the value or a URL to it.
 */
export function eventField(name: string, stored: unknown): Record<string, unknown> {
  const ref = payloadRef(stored);
  return ref ? { [name]: null, [`${name}_ref`]: ref } : { [name]: inlineValue(stored) };
}
