import type { BlobStore } from "../blobs/blob-store.ts";
import { fileNotFound } from "../core/file.ts";
import type { FileStore } from "../store/store.ts";

/** Deletes one of the tenant's files: its row, then its bytes. */
export async function deleteFile(
  d: { files: FileStore; blobs: BlobStore },
  tenantId: string,
  id: string,
): Promise<void> {
  const file = await d.files.deleteFile(tenantId, id);
  if (!file) throw fileNotFound(id);
  // The row is gone first, so no reader is answered a file whose bytes are going; bytes left
  // by a failure here name no row and are harmless.
  await d.blobs.delete(file.blobKey);
}
