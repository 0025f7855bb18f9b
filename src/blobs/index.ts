export { BLOB_KEY_MAX_LENGTH, checkBlobKey } from "./blob-key.ts";
export type { BlobInfo, BlobStat, BlobStore, ByteRange, PutOptions } from "./blob-store.ts";
export { FsBlobStore, type FsBlobStoreOptions } from "./fs-blob-store.ts";
export type { S3BlobStoreOptions } from "./s3-blob-store.ts";

/**
 * An S3-compatible blob store. `@aws-sdk/client-s3` is an optional dependency of longhaul,
 * loaded here on first use, so a deployment that keeps its blobs on disk need not install it.
 */
export async function openS3BlobStore(
  options: import("./s3-blob-store.ts").S3BlobStoreOptions,
): Promise<import("./blob-store.ts").BlobStore> {
  const { S3BlobStore } = await import("./s3-blob-store.ts");
  return new S3BlobStore(options);
}
