import { LonghaulError } from "../core/errors.ts";

/** The decimal text a signer puts in a timestamp header; refuses what no verifier would accept. */
export function timestampText(timestampS: number): string {
  if (!Number.isSafeInteger(timestampS) || timestampS < 0) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `A webhook timestamp is a whole number of seconds; got ${timestampS}.`,
    );
  }
  return String(timestampS);
}

/** A body given to a signer as text or bytes, as the bytes that are sent. */
export function bytesOf(body: Buffer | string): Buffer {
  return typeof body === "string" ? Buffer.from(body, "utf8") : body;
}
