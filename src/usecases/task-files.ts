import type { BlobStore } from "../blobs/blob-store.ts";
import { LonghaulError, NonRetriableError } from "../core/errors.ts";
import type { FileRef, OpenedFile, TaskFiles } from "../core/file-refs.ts";
import type { FileStore } from "../store/store.ts";

/**
 * The `ctx.files` of a tenant's task: `open({file_id})` streams one of the tenant's files from
 * the blob store (another tenant's reads as none: FILE_NOT_FOUND). A `{url}` reference passes
 * the submit-time check but is not read from task code yet: it fails without retry.
 */
export function taskFiles(
  d: { files: Pick<FileStore, "getFile">; blobs: BlobStore },
  tenantId: string,
): TaskFiles {
  return {
    async open(ref: FileRef): Promise<OpenedFile> {
      if (!("file_id" in ref)) {
        throw new NonRetriableError(
          'Reading {"url"} references from task code is not supported; upload the file and pass {"file_id"}.',
        );
      }
      const file = await d.files.getFile(tenantId, ref.file_id);
      if (!file)
        throw new LonghaulError("FILE_NOT_FOUND", `No file ${ref.file_id.slice(0, 80)} in this tenant.`);
      return {
        stream: await d.blobs.get(file.blobKey),
        size: file.size,
        contentType: file.contentType,
        sha256: file.sha256,
      };
    },
  };
}
