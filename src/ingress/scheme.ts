import { timingSafeEqual } from "node:crypto";

/** What a verification scheme is given: the request as it arrived, before any parse (DESIGN §4.3). */
export interface VerifyInput {
  /** Lower-cased header names, as Node gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** The raw body bytes; nothing has parsed them yet. */
  body: Buffer;
  /** Current and previous secrets of the source, for rotation: any one may match. */
  secrets: readonly string[];
  /** How far the signed timestamp may be from now, in seconds, in both directions. */
  toleranceS: number;
  nowMs: number;
}

/** What a scheme learned from a verified request. */
export interface Verified {
  /** The sender's delivery id, when the scheme carries one: the inbox dedupes on it. */
  eventId: string | null;
  /** The signed timestamp in seconds, when the scheme signs one. */
  timestampS: number | null;
}

/**
 * A webhook verification scheme. `verify` returns only for an authentic request and
 * otherwise throws `LonghaulError` (`SIGNATURE_MISSING`, `SIGNATURE_INVALID`,
 * `TIMESTAMP_OUT_OF_TOLERANCE`, or `CONFIG_INVALID` for an unusable secret).
 */
export interface Scheme {
  readonly name: string;
  verify(input: VerifyInput): Verified;
}

/**
 * Constant-time equality of two byte strings that answers `false`, never throws, when the
 * lengths differ. The length is not secret: an expected MAC's length is fixed by its algorithm.
 */
export function timingSafeEqualBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `timingSafeEqualBytes` over the UTF-8 bytes of two strings. */
export function timingSafeEqualStr(a: string, b: string): boolean {
  return timingSafeEqualBytes(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** A header's single value, the first one when it was repeated; `name` must be lower case. */
export function header(headers: VerifyInput["headers"], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
