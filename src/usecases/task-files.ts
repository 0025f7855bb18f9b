import type { BlobStore } from "../blobs/blob-store.ts";
import { LonghaulError, nonRetriable } from "../core/errors.ts";
import type { FileRef, OpenedFile, TaskFiles } from "../core/file-refs.ts";
import type { UrlReader } from "../outbound/read-url.ts";
import type { FileStore } from "../store/store.ts";

/**
 * The `ctx.files` of a tenant's task: `open({file_id})` streams one of the tenant's files from
 * the blob store (another tenant's reads as none: FILE_NOT_FOUND, final for the step, since
 * retrying cannot make it appear); `open({url})` streams a URL through the deployment's reader
 * (src/outbound/read-url.ts), or fails without retry when the deployment reads none.
 */
export function taskFiles(
  d: { files: Pick<FileStore, "getFile">; blobs: BlobStore; urls?: UrlReader | undefined },
  tenantId: string,
): TaskFiles {
  return {
    async open(ref: FileRef): Promise<OpenedFile> {
      if (!("file_id" in ref)) {
        if (!d.urls) {
          throw nonRetriable(
            new LonghaulError("URL_READS_NOT_CONFIGURED", 'This deployment reads no {"url"} references.'),
          );
        }
        return d.urls.open(ref.url);
      }
      const file = await d.files.getFile(tenantId, ref.file_id);
      if (!file) {
        throw nonRetriable(
          new LonghaulError("FILE_NOT_FOUND", `No file ${ref.file_id.slice(0, 80)} in this tenant.`),
        );
      }
      return {
        stream: await d.blobs.get(file.blobKey),
        size: file.size,
        contentType: file.contentType,
        sha256: file.sha256,
      };
    },
  };
}
