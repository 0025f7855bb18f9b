import type { BlobStore } from "../blobs/blob-store.ts";
import type { Clock } from "../core/clock.ts";
import type { FileStore } from "../store/store.ts";

/** Where rows' blobs live: files' (`files/<tenant>/<uuid>`) and artifacts' (`artifacts/<tenant>/<task>/<uuid>`). */
export const ROW_BLOB_PREFIXES = ["files/", "artifacts/"] as const;

/**
 * A blob no row names is an orphan once it is older than this. Bytes are written before their
 * row (ARCHITECTURE §3.8) and the row follows at once, so a younger blob may be one whose row
 * is still on its way; a day is far past any write.
 */
export const ORPHAN_BLOB_GRACE_MS = 24 * 3_600_000;

const PAGE = 500;

/**
 * Removes final blobs under `files/` and `artifacts/` that no row names and that were written
 * more than `graceMs` ago on the injected clock: what a process that died between the bytes and
 * the row left. The store's keys are listed a page at a time, each page compared with the rows
 * in one query; a candidate is checked again just before it is removed. A blob whose store
 * cannot tell its age is kept. Answers how many were removed.
 */
export async function sweepOrphanBlobs(
  d: { store: Pick<FileStore, "namedBlobKeys">; blobs: BlobStore; clock: Clock },
  a: { graceMs?: number } = {},
): Promise<number> {
  const cutoff = d.clock.now() - (a.graceMs ?? ORPHAN_BLOB_GRACE_MS);
  let removed = 0;
  const sweepPage = async (keys: string[]): Promise<void> => {
    const named = await d.store.namedBlobKeys(keys);
    const old: string[] = [];
    for (const key of keys) {
      if (named.has(key)) continue;
      const info = await d.blobs.stat(key);
      if (info?.modifiedAt !== undefined && info.modifiedAt < cutoff) old.push(key);
    }
    if (old.length === 0) return;
    const namedNow = await d.store.namedBlobKeys(old);
    for (const key of old) {
      if (namedNow.has(key)) continue;
      await d.blobs.delete(key);
      removed++;
    }
  };
  for (const prefix of ROW_BLOB_PREFIXES) {
    let page: string[] = [];
    for await (const key of d.blobs.list(prefix)) {
      page.push(key);
      if (page.length >= PAGE) {
        await sweepPage(page);
        page = [];
      }
    }
    if (page.length > 0) await sweepPage(page);
  }
  return removed;
}
