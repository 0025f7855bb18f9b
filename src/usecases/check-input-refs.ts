import { LonghaulError } from "../core/errors.ts";
import { findFileRefs, type UrlPolicy } from "../core/file-refs.ts";
import { checkRefUrl } from "../outbound/ref-url.ts";
import type { FileStore } from "../store/store.ts";

/**
 * Checks the file references in a submitted input (src/core/file-refs.ts), whatever the task
 * type: each `{"file_id": …}` must be one of the tenant's files (another tenant's reads as
 * none: FILE_NOT_FOUND), each `{"url": …}` must pass `checkRefUrl` (URL_NOT_ALLOWED). Both name
 * the reference's JSON path as `param`. Nothing is stored when one fails.
 */
export async function checkInputRefs(
  d: { files: Pick<FileStore, "getFile">; urlPolicy: UrlPolicy },
  tenantId: string,
  input: unknown,
): Promise<void> {
  for (const ref of findFileRefs(input)) {
    if (ref.kind === "url") {
      checkRefUrl(ref.url, d.urlPolicy, `${ref.path}.url`);
      continue;
    }
    const file = /^file_[A-Za-z0-9]{1,64}$/.test(ref.fileId)
      ? await d.files.getFile(tenantId, ref.fileId)
      : null;
    if (!file) {
      throw new LonghaulError(
        "FILE_NOT_FOUND",
        `No file ${ref.fileId.slice(0, 80)} in this tenant (${ref.path}).`,
        {
          param: `${ref.path}.file_id`,
        },
      );
    }
  }
}
