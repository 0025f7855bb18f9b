import { createHash, randomUUID } from "node:crypto";
import { type FileHandle, open, readdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { PutOptions } from "./blob-store.ts";

/** Temporary files start with this; no key segment may start with `.` (`checkBlobKey`). */
export const TEMP_PREFIX = ".tmp-";

export interface Spooled {
  path: string;
  size: number;
  sha256: string;
}

/** Chunks are gathered into writes of about this many bytes. */
const WRITE_BATCH_BYTES = 1024 * 1024;

/**
 * Streams `body` into a new temporary file in `dir`, hashing and counting each chunk as it
 * arrives, then fsyncs it. Chunks are gathered into writes of about 1 MiB, and one write is in
 * flight while the next batch is read: reading and writing overlap, and at most two batches are
 * held. On any failure (the source errors or is destroyed, the limit is passed, the disk fails)
 * the temporary file is removed and the error rethrown.
 */
export async function spoolToTemp(
  dir: string,
  body: Readable | AsyncIterable<Uint8Array>,
  options: PutOptions = {},
): Promise<Spooled> {
  const path = join(dir, `${TEMP_PREFIX}${randomUUID()}`);
  const hash = createHash("sha256");
  let size = 0;
  let file: FileHandle | undefined;
  let inFlight: Promise<unknown> = Promise.resolve();
  let batch: Uint8Array[] = [];
  let batchBytes = 0;
  const flush = async (fh: FileHandle) => {
    await inFlight;
    const chunks = batch;
    batch = [];
    batchBytes = 0;
    inFlight = fh.writev(chunks);
    // Awaited by the next flush or the end; a failure before then must not go unhandled.
    inFlight.catch(() => {});
  };
  try {
    file = await open(path, "wx");
    for await (const chunk of body) {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Uint8Array);
      size += bytes.byteLength;
      if (options.maxBytes !== undefined && size > options.maxBytes) {
        throw fileTooLarge(options.maxBytes);
      }
      hash.update(bytes);
      batch.push(bytes);
      batchBytes += bytes.byteLength;
      if (batchBytes >= WRITE_BATCH_BYTES) await flush(file);
    }
    if (batchBytes > 0) await flush(file);
    await inFlight;
    await file.sync();
    await file.close();
    file = undefined;
    return { path, size, sha256: hash.digest("hex") };
  } catch (err) {
    await inFlight.catch(() => {});
    await file?.close().catch(() => {});
    await unlink(path).catch(() => {});
    throw err;
  }
}

export function fileTooLarge(maxBytes: number): LonghaulError {
  return new LonghaulError(
    "FILE_TOO_LARGE",
    `The file is larger than the limit of ${maxBytes} bytes (limits.file_max_bytes); nothing was kept.`,
    { details: { limit_bytes: maxBytes } },
  );
}

/** Removes temporary files under `root` (recursively) last modified more than `olderThanMs` ago on `clock`. */
export async function sweepTemps(root: string, olderThanMs: number, clock: Clock): Promise<number> {
  const cutoff = clock.now() - olderThanMs;
  let removed = 0;
  const walk = async (dir: string): Promise<void> => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && entry.name.startsWith(TEMP_PREFIX)) {
        const info = await stat(path).catch(() => null);
        if (info && info.mtimeMs < cutoff) {
          await unlink(path).catch(() => {});
          removed++;
        }
      }
    }
  };
  await walk(root);
  return removed;
}
