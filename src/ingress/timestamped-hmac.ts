import type { KeyObject } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import {
  anyEqual,
  checkWindow,
  parseTimestampS,
  type Scheme,
  type SchemeSource,
  toleranceOf,
  utf8SecretKeys,
  type Verifier,
  type VerifyRequest,
} from "./scheme.ts";

/**
 * What sets one timestamped HMAC scheme apart (Stripe, Slack, goog-hmac). They share the
 * order of checks: signature headers present → timestamp well formed and within the
 * tolerance, both ways → a MAC over the timestamp and the raw body, under any of the
 * source's secrets, equal in constant time to one of the candidates → only then the body.
 */
export interface TimestampedHmac {
  name: string;
  /**
   * Reads the signed timestamp and the candidate signatures, throwing `SIGNATURE_MISSING`
   * or `SIGNATURE_INVALID` for headers that are absent or malformed. Candidates of a version
   * the scheme does not know must not be returned.
   */
  read(headers: VerifyRequest["headers"]): { timestamp: string; candidates: string[] };
  /** How error messages name the timestamp, e.g. "X-Slack-Request-Timestamp". */
  timestampName: string;
  /** The signature each candidate is compared with, in the candidates' encoding. */
  mac(key: KeyObject | string, timestamp: string, body: Buffer): string;
  /** Said when no candidate matches: where the operator finds the right secret. */
  mismatch: string;
  /** The event id, read from the verified request. */
  eventId(req: VerifyRequest): string | null;
  /** The JSON event a verified body wraps, when it is not JSON itself (`Verified.eventBody`). */
  eventBody?(req: VerifyRequest): Buffer | undefined;
}

export function timestampedHmacScheme(def: TimestampedHmac): Scheme {
  return {
    name: def.name,
    create(source: SchemeSource): Verifier {
      const keys = utf8SecretKeys(source);
      const toleranceS = toleranceOf(source);
      return {
        verify(req) {
          const { timestamp, candidates } = def.read(req.headers);
          const timestampS = parseTimestampS(timestamp, def.timestampName);
          checkWindow(timestampS, req.nowMs, toleranceS, def.timestampName);
          const expected = keys.map((key) => def.mac(key, timestamp, req.body));
          if (!anyEqual(candidates, expected)) {
            throw new LonghaulError("SIGNATURE_INVALID", def.mismatch, { details: { scheme: def.name } });
          }
          const eventBody = def.eventBody?.(req);
          return { eventId: def.eventId(req), timestampS, ...(eventBody ? { eventBody } : {}) };
        },
      };
    },
  };
}
