import type { Readable } from "node:stream";

/** What a finished write stored: the key, its length in bytes and the SHA-256 of its bytes (hex). */
export interface BlobInfo {
  key: string;
  size: number;
  sha256: string;
}

/** What `stat` answers of a blob. */
export interface BlobStat {
  key: string;
  size: number;
  modifiedAt?: number;
}

/** A byte range of a blob, both ends inclusive (as HTTP's `Range: bytes=start-end`). */
export interface ByteRange {
  start: number;
  /** The last byte read; the blob's last byte when absent. */
  end?: number;
}

export interface PutOptions {
  /** Refuse a body longer than this: the write is abandoned, nothing is kept, `FILE_TOO_LARGE`. */
  maxBytes?: number;
}

/**
 * Where bytes live: a directory on local disk, or an S3-compatible bucket. A key names one blob;
 * keys are checked by `checkBlobKey` (`BLOB_KEY_INVALID`).
 *
 * - `put` streams the body, counting and hashing it as it goes, and makes the blob visible under
 *   its key only once every byte is durable: a body cut off midway (the source errors or is
 *   destroyed) leaves nothing under the key and throws. An existing blob under the key is
 *   replaced whole.
 * - `get` streams a blob or a range of it; a missing key is `BLOB_NOT_FOUND`, a range outside
 *   the blob `RANGE_NOT_SATISFIABLE`.
 * - `sweep` removes the temporary files writes leave when the process dies midway, those older
 *   than `olderThanMs` on the store's clock; a write under way is younger and is kept.
 */
export interface BlobStore {
  put(key: string, body: Readable | AsyncIterable<Uint8Array>, options?: PutOptions): Promise<BlobInfo>;
  get(key: string, range?: ByteRange): Promise<Readable>;
  /**
   * The blob's size and when it was written (milliseconds since the epoch; a store that cannot
   * tell leaves it out, and the orphan sweep then never removes the blob), or null when no blob
   * has that key.
   */
  stat(key: string): Promise<BlobStat | null>;
  /** Removes the blob; a missing key is not an error. */
  delete(key: string): Promise<void>;
  /** Every key that starts with `prefix`, in ascending order. */
  list(prefix?: string): AsyncIterable<string>;
  /** Removes temporary files older than `olderThanMs`; answers how many it removed. */
  sweep(olderThanMs: number): Promise<number>;
}
