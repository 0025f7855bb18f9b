import { LonghaulError } from "../core/errors.ts";
import type { ByteRange } from "./blob-store.ts";

/** The inclusive `[start, end]` a range names in a blob of `size` bytes, or `RANGE_NOT_SATISFIABLE`. */
export function resolveRange(range: ByteRange, size: number, key: string): { start: number; end: number } {
  const end = range.end === undefined ? size - 1 : Math.min(range.end, size - 1);
  if (!Number.isSafeInteger(range.start) || range.start < 0 || range.start >= size || end < range.start) {
    throw new LonghaulError(
      "RANGE_NOT_SATISFIABLE",
      `The range ${range.start}-${range.end ?? ""} is outside the blob ${key} of ${size} bytes.`,
      { details: { size } },
    );
  }
  return { start: range.start, end };
}

export function blobNotFound(key: string): LonghaulError {
  return new LonghaulError("BLOB_NOT_FOUND", `No blob has the key ${key}.`);
}
