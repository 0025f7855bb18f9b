import { createReadStream } from "node:fs";
import { mkdir, unlink } from "node:fs/promises";
import type { Readable } from "node:stream";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { type Clock, systemClock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { checkBlobKey, checkBlobPrefix } from "./blob-key.ts";
import type { BlobInfo, BlobStat, BlobStore, ByteRange, PutOptions } from "./blob-store.ts";
import { blobNotFound, resolveRange } from "./range.ts";
import { spoolToTemp, sweepTemps } from "./spool.ts";

export interface S3BlobStoreOptions {
  bucket: string;
  /** Prepended to every key in the bucket (`longhaul/`), so one bucket can hold more than longhaul. */
  prefix?: string;
  /** A client of your own, or the config to build one (endpoint, region, credentials, forcePathStyle). */
  client?: S3Client;
  clientConfig?: S3ClientConfig;
  /** A local directory for the body while it is hashed and counted, before it is sent. */
  spoolDir: string;
  clock?: Clock;
}

/**
 * Blobs as objects of an S3-compatible bucket. A body is first spooled to a local temporary
 * file (hashed and counted, never held in memory), then sent with one PutObject of known
 * length: S3 makes an object visible whole or not at all, and a body cut off midway is never
 * sent. `sweep` removes the spool's leftovers. Uses PutObject, GetObject (with Range),
 * HeadObject, DeleteObject and ListObjectsV2 only.
 */
export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly spoolDir: string;
  private readonly clock: Clock;

  constructor(options: S3BlobStoreOptions) {
    this.bucket = options.bucket;
    this.prefix = options.prefix ?? "";
    this.spoolDir = options.spoolDir;
    this.clock = options.clock ?? systemClock;
    this.client =
      options.client ??
      new S3Client({
        // Checksums only where an operation requires them: S3-compatible servers differ in
        // which of the newer checksum headers and trailers they understand.
        requestChecksumCalculation: "WHEN_REQUIRED",
        responseChecksumValidation: "WHEN_REQUIRED",
        ...options.clientConfig,
      });
  }

  private objectKey(key: string): string {
    return this.prefix + checkBlobKey(key);
  }

  async put(
    key: string,
    body: Readable | AsyncIterable<Uint8Array>,
    options?: PutOptions,
  ): Promise<BlobInfo> {
    const objectKey = this.objectKey(key);
    await mkdir(this.spoolDir, { recursive: true });
    const spooled = await spoolToTemp(this.spoolDir, body, options);
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: objectKey,
          Body: createReadStream(spooled.path),
          ContentLength: spooled.size,
          Metadata: { sha256: spooled.sha256 },
        }),
      );
    } catch (err) {
      throw unavailable("write", key, err);
    } finally {
      await unlink(spooled.path).catch(() => {});
    }
    return { key, size: spooled.size, sha256: spooled.sha256 };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const objectKey = this.objectKey(key);
    let header: string | undefined;
    if (range) {
      const info = await this.stat(key);
      if (!info) throw blobNotFound(key);
      const { start, end } = resolveRange(range, info.size, key);
      header = `bytes=${start}-${end}`;
    }
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: objectKey, Range: header }),
      );
      return out.Body as Readable;
    } catch (err) {
      if (statusOf(err) === 404) throw blobNotFound(key);
      throw unavailable("read", key, err);
    }
  }

  async stat(key: string): Promise<BlobStat | null> {
    const objectKey = this.objectKey(key);
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: objectKey }));
      const modifiedAt = out.LastModified?.getTime();
      return { key, size: out.ContentLength ?? 0, ...(modifiedAt === undefined ? {} : { modifiedAt }) };
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw unavailable("read", key, err);
    }
  }

  async delete(key: string): Promise<void> {
    const objectKey = this.objectKey(key);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: objectKey }));
    } catch (err) {
      if (statusOf(err) === 404) return;
      throw unavailable("delete", key, err);
    }
  }

  async *list(prefix = ""): AsyncIterable<string> {
    checkBlobPrefix(prefix);
    let token: string | undefined;
    do {
      let out: import("@aws-sdk/client-s3").ListObjectsV2CommandOutput;
      try {
        out = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.prefix + prefix,
            ContinuationToken: token,
          }),
        );
      } catch (err) {
        throw unavailable("list", prefix, err);
      }
      for (const object of out.Contents ?? []) {
        if (object.Key?.startsWith(this.prefix)) yield object.Key.slice(this.prefix.length);
      }
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token);
  }

  sweep(olderThanMs: number): Promise<number> {
    return sweepTemps(this.spoolDir, olderThanMs, this.clock);
  }
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function unavailable(what: string, key: string, cause: unknown): LonghaulError {
  if (cause instanceof LonghaulError) return cause;
  const why = cause instanceof Error ? cause.message : String(cause);
  return new LonghaulError(
    "BLOB_STORE_UNAVAILABLE",
    `The blob store could not ${what} ${key} (${why}); nothing was changed. Retry later.`,
    { cause },
  );
}
