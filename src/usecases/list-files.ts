import type { FileRow } from "../core/file.ts";
import type { FileStore } from "../store/store.ts";

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

/** A page of the tenant's files, newest first; the limit is kept within 1..200. */
export function listFiles(
  d: { files: FileStore },
  tenantId: string,
  q: { limit?: number | undefined; cursor?: string | undefined },
): Promise<{ files: FileRow[]; nextCursor: string | null }> {
  const limit = Math.min(MAX_LIMIT, Math.max(1, Math.trunc(q.limit ?? DEFAULT_LIMIT) || DEFAULT_LIMIT));
  return d.files.listFiles(tenantId, { limit, cursor: q.cursor });
}
