import type { Readable } from "node:stream";
import type { BlobStore, ByteRange } from "../blobs/blob-store.ts";
import { type FileRow, fileNotFound } from "../core/file.ts";
import type { FileStore } from "../store/store.ts";

/** One of the tenant's files; another tenant's id is `FILE_NOT_FOUND`. */
export async function getFile(d: { files: FileStore }, tenantId: string, id: string): Promise<FileRow> {
  const file = await d.files.getFile(tenantId, id);
  if (!file) throw fileNotFound(id);
  return file;
}

/**
 * A file's bytes, whole or a range of them (`RANGE_NOT_SATISFIABLE` outside it), with its row.
 * Bytes missing under a row (removed behind longhaul's back) read as `FILE_NOT_FOUND`.
 */
export async function readFileContent(
  d: { files: FileStore; blobs: BlobStore },
  tenantId: string,
  id: string,
  range?: ByteRange,
): Promise<{ file: FileRow; body: Readable }> {
  const file = await getFile(d, tenantId, id);
  try {
    return { file, body: await d.blobs.get(file.blobKey, range) };
  } catch (err) {
    if ((err as { code?: string }).code === "BLOB_NOT_FOUND") throw fileNotFound(id);
    throw err;
  }
}
