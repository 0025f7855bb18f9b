import { createHash, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import { type JsonRead, readJson } from "../core/json-input.ts";
import type { SourceConfig } from "./source-config.ts";

/** What a verifier is given: the request as it arrived, before any parse (ARCHITECTURE §4.3). */
export interface VerifyRequest {
  /** Lower-cased header names, as Node gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** The raw body bytes; nothing has parsed them yet. */
  body: Buffer;
  nowMs: number;
}

/** What a scheme learned from a verified request. */
export interface Verified {
  /**
   * What the inbox dedupes this delivery on: the sender's event id when the scheme signs or
   * otherwise trusts one, else null and the route uses `sha256:<hex of the body>`.
   */
  eventId: string | null;
  /** The signed timestamp in seconds, when the scheme signs one. */
  timestampS: number | null;
  /**
   * A delivery id the sender put in an unsigned header, when the inbox does not dedupe on it
   * (GitHub's X-GitHub-Delivery): logged so the operator can match a delivery in the sender's
   * log with what was recorded.
   */
  deliveryId?: string;
  /**
   * The event id names a credential meant for one delivery (a `jwt` token from
   * `webhook-signature`), whose signature may cover no body: the inbox takes a second
   * delivery under it as a duplicate only with the same bytes, and refuses another body
   * (TOKEN_REPLAYED).
   */
  bindsBody?: boolean;
  /**
   * The JSON event the verified bytes carry, when they are not JSON themselves (Slack's
   * interactivity posts, `payload=<url-encoded JSON>`): what the inbox records and the
   * provider parses. Absent: the body is the event.
   */
  eventBody?: Buffer;
}

/**
 * Checks requests for one source. `verify` returns only for an authentic request and
 * otherwise throws `LonghaulError`: `SIGNATURE_MISSING`, `SIGNATURE_INVALID` or
 * `TIMESTAMP_OUT_OF_TOLERANCE` (all 401), or `JWKS_UNAVAILABLE` when the keys to check
 * with cannot be had right now.
 */
export interface Verifier {
  verify(req: VerifyRequest): Verified | Promise<Verified>;
  /**
   * True when a verified request proves who sent it but not what it says: a `jwt` source
   * whose tokens carry no body hash. Such a source confirms its events with the provider by
   * default (`confirm_with_provider`, ARCHITECTURE §4.3).
   */
  readonly bodyUnsigned?: boolean;
  /**
   * How long, in seconds, one credential of this source is accepted (a token's `max_age_s`
   * plus the tolerance); the inbox must remember event ids at least this long so that a
   * replay within it is still seen. Absent: the scheme's own timestamp window bounds it.
   */
  readonly replayWindowS?: number;
}

/** The configuration a scheme builds its verifier from. */
export type SchemeSource = SourceConfig & { name: string };

/**
 * A webhook verification scheme. `create` prepares what a source needs once (decoded keys,
 * a JWKS) and throws `CONFIG_INVALID` for a configuration it cannot use, so a bad secret
 * stops the process at start rather than refusing every delivery later.
 */
export interface Scheme {
  readonly name: string;
  create(source: SchemeSource): Verifier;
}

/** How far a signed timestamp may be from now, both ways, unless the source says otherwise. */
export const DEFAULT_TOLERANCE_S = 300;

export function toleranceOf(source: SchemeSource): number {
  return source.tolerance_s ?? DEFAULT_TOLERANCE_S;
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

/** Whether any candidate equals any expected value, each pair compared in constant time. */
export function anyEqual(candidates: readonly string[], expected: readonly string[]): boolean {
  return expected.some((e) => candidates.some((c) => timingSafeEqualStr(c, e)));
}

/** A header's single value, the first one when it was repeated; `name` must be lower case. */
export function header(headers: VerifyRequest["headers"], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The values of the named headers, or `SIGNATURE_MISSING` naming every one that is absent or
 * empty; `hint` tells the operator what a correct sender sets.
 */
export function requireHeaders<const N extends readonly string[]>(
  headers: VerifyRequest["headers"],
  names: N,
  scheme: string,
  hint: string,
): { [K in keyof N]: string } {
  const values = names.map((n) => header(headers, n));
  const missing = names.filter((_, i) => !values[i]);
  if (missing.length > 0) {
    throw new LonghaulError(
      "SIGNATURE_MISSING",
      `The request has no ${missing.join(", ")} header; ${hint}.`,
      {
        details: { scheme, missing },
      },
    );
  }
  return values as { [K in keyof N]: string };
}

/**
 * The source's `secrets`, required and non-empty for the HMAC schemes. Several may be listed
 * during a rotation: a delivery signed with any one of them is accepted.
 */
export function requireSecrets(source: SchemeSource): string[] {
  const secrets = source.secrets;
  if (
    !Array.isArray(secrets) ||
    secrets.length === 0 ||
    !secrets.every((s) => typeof s === "string" && s.length > 0)
  ) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${source.name}" (scheme ${source.scheme ?? "standard-webhooks"}) needs at least one non-empty secret in "secrets"; copy it from the sender's webhook settings.`,
    );
  }
  return secrets;
}

/**
 * The secrets of a scheme that keys its HMAC with the secret's UTF-8 bytes (Stripe, GitHub,
 * Slack, goog-hmac), as key objects made once. Whitespace at either end is refused: it is a
 * copy-paste slip that would make every signature fail.
 */
export function utf8SecretKeys(source: SchemeSource): KeyObject[] {
  return requireSecrets(source).map((secret) => {
    if (secret.trim() !== secret) {
      throw new LonghaulError(
        "CONFIG_INVALID",
        `A secret of source "${source.name}" starts or ends with whitespace; copy it again without it.`,
      );
    }
    return createSecretKey(Buffer.from(secret, "utf8"));
  });
}

/** Parses a signed timestamp: whole seconds since the epoch, digits only. */
export function parseTimestampS(value: string, headerName: string): number {
  const seconds = /^\d{1,15}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(seconds)) {
    throw new LonghaulError(
      "SIGNATURE_INVALID",
      `${headerName} must be a whole number of seconds since the epoch; got ${JSON.stringify(value.slice(0, 40))}.`,
    );
  }
  return seconds;
}

/** Refuses a signed timestamp further than `toleranceS` from now, in either direction. */
export function checkWindow(timestampS: number, nowMs: number, toleranceS: number, headerName: string): void {
  const nowS = Math.floor(nowMs / 1000);
  if (Math.abs(nowS - timestampS) <= toleranceS) return;
  const direction = timestampS < nowS ? "old" : "far in the future";
  throw new LonghaulError(
    "TIMESTAMP_OUT_OF_TOLERANCE",
    `${headerName} ${timestampS} is ${Math.abs(nowS - timestampS)} s ${direction}, beyond the ${toleranceS} s tolerance; check the sender's clock, or replay the event with a fresh timestamp.`,
    { details: { timestampS, nowS, toleranceS } },
  );
}

/**
 * The outcome of reading a body as JSON: its value, or `ok: false` with the error to answer
 * when it is not JSON, nests too deep, or carries prototype keys (core/json-input.ts).
 */
export type JsonBody = JsonRead;

const parsedBodies = new WeakMap<Buffer, JsonBody>();

/**
 * The body parsed as UTF-8 JSON, once per body: a scheme that reads the event id from the
 * body and the route that checks the body is JSON share one parse. Call it only after the
 * signature is verified (ARCHITECTURE §4.3).
 */
export function jsonBody(body: Buffer): JsonBody {
  const known = parsedBodies.get(body);
  if (known) return known;
  const parsed = readJson(body.toString("utf8"));
  parsedBodies.set(body, parsed);
  return parsed;
}

const bodyDigests = new WeakMap<Buffer, string>();

/** The hex SHA-256 of the raw body, computed once per body however many readers ask. */
export function bodySha256(body: Buffer): string {
  let digest = bodyDigests.get(body);
  if (digest === undefined) {
    digest = createHash("sha256").update(body).digest("hex");
    bodyDigests.set(body, digest);
  }
  return digest;
}

/**
 * The event id of a delivery that carries no trusted id of its own: the same bytes are the
 * same event, however often and under whatever unsigned header they come.
 */
export function bodyEventId(body: Buffer): string {
  return `sha256:${bodySha256(body)}`;
}

/** A non-empty string member of a verified JSON object body, or null. */
export function bodyField(body: Buffer, field: string): string | null {
  const parsed = jsonBody(body);
  if (!parsed.ok || typeof parsed.value !== "object" || parsed.value === null) return null;
  const value = (parsed.value as Record<string, unknown>)[field];
  return typeof value === "string" && value.length > 0 ? value : null;
}
