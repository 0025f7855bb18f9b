import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import type { BlobStore } from "../blobs/blob-store.ts";
import type { Clock } from "../core/clock.ts";
import { checkContentType, checkFilename, type FileRow, fileBlobKey, fileSizeCap } from "../core/file.ts";
import type { FileStore } from "../store/store.ts";

export interface UploadFileInput {
  tenantId: string;
  body: Readable | AsyncIterable<Uint8Array>;
  contentType?: string | undefined;
  filename?: string | undefined;
  /** `limits.file_max_bytes`; 0 lifts the cap. */
  maxBytes: number;
  /** `limits.storage_quota_bytes` (the tenant's `quotas.storage_quota_bytes` wins); 0 lifts it. */
  storageQuotaBytes?: number;
}

/**
 * Stores an upload: checks its name and type, streams its bytes into the blob store (hashed and
 * counted there, `FILE_TOO_LARGE` past the cap), and only then records its row (ARCHITECTURE
 * §3.8, bytes before row). A body cut off midway leaves no blob and no row. The same bytes
 * again in the same tenant answer the existing file (`created: false`) and the new copy is
 * removed. When the row cannot be written the bytes are removed too, as when the file would take
 * the tenant past its storage quota (`413 STORAGE_QUOTA_EXCEEDED`, counted in the transaction
 * that would insert the row, so uploads at once cannot both slip under it).
 */
export async function uploadFile(
  d: { files: FileStore; blobs: BlobStore; clock: Clock },
  q: UploadFileInput,
): Promise<{ file: FileRow; created: boolean }> {
  const filename = checkFilename(q.filename);
  const contentType = checkContentType(q.contentType);
  const blobKey = fileBlobKey(q.tenantId, randomUUID());
  const cap = fileSizeCap(q.maxBytes);
  const stored = await d.blobs.put(blobKey, q.body, cap === undefined ? {} : { maxBytes: cap });
  let result: { file: FileRow; created: boolean };
  try {
    result = await d.files.createFile(
      {
        tenantId: q.tenantId,
        filename,
        contentType,
        size: stored.size,
        sha256: stored.sha256,
        blobKey,
        createdAt: d.clock.now(),
      },
      q.storageQuotaBytes === undefined ? {} : { storageQuotaBytes: q.storageQuotaBytes },
    );
  } catch (err) {
    await d.blobs.delete(blobKey).catch(() => {});
    throw err;
  }
  if (!result.created) await d.blobs.delete(blobKey);
  return result;
}
