import { createReadStream } from "node:fs";
import { mkdir, open, readdir, rename, stat, unlink } from "node:fs/promises";
import { dirname, join, sep } from "node:path";
import type { Readable } from "node:stream";
import { type Clock, systemClock } from "../core/clock.ts";
import { checkBlobKey, checkBlobPrefix } from "./blob-key.ts";
import type { BlobInfo, BlobStat, BlobStore, ByteRange, PutOptions } from "./blob-store.ts";
import { blobNotFound, resolveRange } from "./range.ts";
import { spoolToTemp, sweepTemps, TEMP_PREFIX } from "./spool.ts";

export interface FsBlobStoreOptions {
  /** The directory blobs live under; created when missing. */
  root: string;
  clock?: Clock;
}

/**
 * Blobs as files under one directory, a key's `/` a subdirectory. A write goes to a temporary
 * file in the key's own directory, is fsynced, renamed over the key's path, and the directory
 * fsynced: a reader sees the old blob or the whole new one, never part of one, and a crash
 * leaves at most a temporary file for `sweep`.
 */
export class FsBlobStore implements BlobStore {
  readonly root: string;
  private readonly clock: Clock;

  constructor(options: FsBlobStoreOptions) {
    this.root = options.root;
    this.clock = options.clock ?? systemClock;
  }

  private pathOf(key: string): string {
    return join(this.root, ...checkBlobKey(key).split("/"));
  }

  async put(
    key: string,
    body: Readable | AsyncIterable<Uint8Array>,
    options?: PutOptions,
  ): Promise<BlobInfo> {
    const path = this.pathOf(key);
    const dir = dirname(path);
    await mkdir(dir, { recursive: true });
    const spooled = await spoolToTemp(dir, body, options);
    try {
      await rename(spooled.path, path);
    } catch (err) {
      await unlink(spooled.path).catch(() => {});
      throw err;
    }
    await syncDir(dir);
    return { key, size: spooled.size, sha256: spooled.sha256 };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const path = this.pathOf(key);
    const info = await this.stat(key);
    if (!info) throw blobNotFound(key);
    if (!range) return createReadStream(path);
    const { start, end } = resolveRange(range, info.size, key);
    return createReadStream(path, { start, end });
  }

  async stat(key: string): Promise<BlobStat | null> {
    try {
      const info = await stat(this.pathOf(key));
      return info.isFile() ? { key, size: info.size, modifiedAt: info.mtimeMs } : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await unlink(this.pathOf(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }

  async *list(prefix = ""): AsyncIterable<string> {
    checkBlobPrefix(prefix);
    // Walk only the directory the prefix's complete segments name.
    const base = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : "";
    const keys: string[] = [];
    const walk = async (dir: string, keyDir: string): Promise<void> => {
      let entries: import("node:fs").Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (
          (err as NodeJS.ErrnoException).code === "ENOENT" ||
          (err as NodeJS.ErrnoException).code === "ENOTDIR"
        )
          return;
        throw err;
      }
      for (const entry of entries) {
        if (entry.name.startsWith(TEMP_PREFIX) || entry.name.startsWith(".")) continue;
        const key = keyDir === "" ? entry.name : `${keyDir}/${entry.name}`;
        if (entry.isDirectory()) {
          if (`${key}/`.startsWith(prefix) || prefix.startsWith(`${key}/`))
            await walk(join(dir, entry.name), key);
        } else if (entry.isFile() && key.startsWith(prefix)) keys.push(key);
      }
    };
    await walk(base === "" ? this.root : join(this.root, ...base.split("/")), base);
    keys.sort();
    yield* keys;
  }

  sweep(olderThanMs: number): Promise<number> {
    return sweepTemps(this.root, olderThanMs, this.clock);
  }
}

/** Makes a rename in `dir` durable. Some platforms cannot open a directory for sync; there the rename stands as is. */
async function syncDir(dir: string): Promise<void> {
  if (sep === "\\") return;
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
