import { type ErrorCode, errorStatus, LonghaulError } from "../../core/errors.ts";

/*
 * What ThreadedSqliteStore and its writer thread say to each other. Values cross by structured
 * clone: plain rows do, a Buffer arrives as a Uint8Array (turned back by `revive`), an error
 * as its name, message and code (turned back by `errorIn`).
 */

/**
 * One store method to run on the writer, for the store `store`, at the caller's time `now`.
 * `open` (args: the file's path) makes the store, `close` ends it.
 */
export interface Call {
  id: number;
  store: number;
  method: string;
  args: unknown[];
  now: number;
}

/** The answer to one call, with what the writes of its store announced so far. */
export type Reply = ({ ok: true; value: unknown } | { ok: false; error: WireError }) & {
  id: number;
  /** The store the call was for. */
  store: number;
  /** Task events appended by committed writes: `tenants[i]` made event `seqs[i]`. */
  events?: { tenants: string[]; seqs: number[] };
  /** A committed write made work due. */
  work?: boolean;
  /** Transactions the writer has committed so far for the call's store. */
  commits?: number;
};

export interface WireError {
  name: string;
  message: string;
  code?: unknown;
  details?: Record<string, unknown>;
  stack?: string;
}

export function errorOut(e: unknown): WireError {
  if (!(e instanceof Error)) return { name: "Error", message: String(e) };
  const { code, details } = e as { code?: unknown; details?: Record<string, unknown> };
  return { name: e.name, message: e.message, code, details, stack: e.stack };
}

/** The error the writer thread threw, as the caller would have seen it in-process. */
export function errorIn(w: WireError): Error {
  if (w.name === "LonghaulError" && typeof w.code === "string" && w.code in errorStatus) {
    return new LonghaulError(w.code as ErrorCode, w.message, w.details ? { details: w.details } : undefined);
  }
  const e = new Error(w.message) as Error & { code?: unknown };
  e.name = w.name;
  if (w.code !== undefined) e.code = w.code;
  if (w.stack) e.stack = w.stack;
  return e;
}

/**
 * `v` ready to cross: a structured clone copies a view's whole ArrayBuffer, and a small Buffer
 * is usually a slice of Node's shared 8 KiB pool (a 300-byte webhook body would carry 8 KiB).
 * Each byte view that does not span its buffer is replaced by an exact copy; objects and
 * arrays holding one are copied, never changed, so the caller's values stay as they were.
 */
export function pack(v: unknown): unknown {
  if (v instanceof Uint8Array) return v.byteLength === v.buffer.byteLength ? v : new Uint8Array(v);
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const p = pack(v[i]);
      if (p === v[i]) continue;
      out ??= v.slice();
      out[i] = p;
    }
    return out ?? v;
  }
  if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    const o = v as Record<string, unknown>;
    let out: Record<string, unknown> | null = null;
    for (const k in o) {
      const p = pack(o[k]);
      if (p === o[k]) continue;
      out ??= { ...o };
      out[k] = p;
    }
    return out ?? v;
  }
  return v;
}

/** `v` with every Uint8Array that crossed the thread boundary a Buffer again (a view, no copy). */
export function revive(v: unknown): unknown {
  if (v instanceof Uint8Array) {
    return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = revive(v[i]);
    return v;
  }
  if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    const o = v as Record<string, unknown>;
    for (const k in o) o[k] = revive(o[k]);
  }
  return v;
}
