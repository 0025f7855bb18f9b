import type { FileRow, NewFile } from "../../core/file.ts";
import { FILE_ID_PREFIX, storageQuotaExceeded } from "../../core/file.ts";
import type { Quotas } from "../../core/quota.ts";
import { parseJson } from "../json.ts";
import { pageById } from "../sql/page.ts";
import type { Tx } from "../sql/tx.ts";
import { deleteFileChunks } from "./chunk-ops.ts";

/*
 * Files' rows, written once for both dialects (src/core/file.ts). The bytes are the blob
 * store's; these operations never touch them. No locks beyond the unique index on
 * (tenant_id, sha256), no task events, no work.
 */

interface FileDbRow {
  id: string;
  tenant_id: string;
  filename: string | null;
  content_type: string;
  size: number;
  sha256: string;
  blob_key: string;
  created_at: number;
}

const toFile = (r: FileDbRow): FileRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  filename: r.filename,
  contentType: r.content_type,
  size: Number(r.size),
  sha256: r.sha256,
  blobKey: r.blob_key,
  createdAt: Number(r.created_at),
});

/**
 * Records an uploaded file. When the tenant already has a file with the same SHA-256 (the
 * unique index), nothing is inserted and that file is answered with `created: false`: the
 * caller then removes the new bytes. Races between two uploads of the same bytes are settled
 * by the index: one inserts, the other reads it.
 */
export async function createFile(
  tx: Tx,
  f: NewFile,
  opts: { storageQuotaBytes?: number } = {},
): Promise<{ file: FileRow; created: boolean }> {
  const same = await tx.get<FileDbRow>("SELECT * FROM files WHERE tenant_id = ? AND sha256 = ?", [
    f.tenantId,
    f.sha256,
  ]);
  if (same) return { file: toFile(same), created: false };
  if (opts.storageQuotaBytes !== undefined) {
    await checkStorageQuota(tx, f.tenantId, f.size, opts.storageQuotaBytes);
  }
  const id = tx.ids.next(FILE_ID_PREFIX);
  const inserted = await tx.run(
    `INSERT INTO files (id, tenant_id, filename, content_type, size, sha256, blob_key, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (tenant_id, sha256) DO NOTHING`,
    [id, f.tenantId, f.filename, f.contentType, f.size, f.sha256, f.blobKey, f.createdAt],
  );
  if (inserted === 1) return { file: { id, ...f }, created: true };
  const existing = await tx.get<FileDbRow>("SELECT * FROM files WHERE tenant_id = ? AND sha256 = ?", [
    f.tenantId,
    f.sha256,
  ]);
  if (!existing) throw new Error("a file conflicted on (tenant_id, sha256) but none was found");
  return { file: toFile(existing), created: false };
}

/**
 * Refuses `size` more bytes that would take a tenant's files and artifacts past its storage
 * quota: the tenant's `quotas.storage_quota_bytes`, else `fallback` (`limits.storage_quota_bytes`);
 * 0 is no cap. The tenant's row is locked first, so uploads and artifacts stored at once are
 * counted one after the other.
 */
export async function checkStorageQuota(
  tx: Tx,
  tenantId: string,
  size: number,
  fallback: number,
): Promise<void> {
  const tenant = await tx.get<{ quotas: string }>(
    `SELECT quotas FROM tenants WHERE id = ?${tx.d.forUpdate}`,
    [tenantId],
  );
  const own = tenant ? parseJson<Quotas>(tenant.quotas)?.storage_quota_bytes : undefined;
  const quota = own ?? fallback;
  if (quota <= 0) return;
  const used = await tx.get<{ n: number | string | null }>(
    `SELECT (SELECT COALESCE(SUM(size), 0) FROM files WHERE tenant_id = ?)
          + (SELECT COALESCE(SUM(size), 0) FROM artifacts WHERE tenant_id = ?) AS n`,
    [tenantId, tenantId],
  );
  const total = Number(used?.n ?? 0);
  if (total + size > quota) throw storageQuotaExceeded(quota, total, size);
}

/** One of the tenant's files, or null: another tenant's id reads as none. */
export async function getFile(tx: Tx, tenantId: string, id: string): Promise<FileRow | null> {
  const row = await tx.get<FileDbRow>("SELECT * FROM files WHERE tenant_id = ? AND id = ?", [tenantId, id]);
  return row ? toFile(row) : null;
}

/** A page of the tenant's files, newest first. */
export async function listFiles(
  tx: Tx,
  tenantId: string,
  q: { limit: number; cursor?: string | undefined },
): Promise<{ files: FileRow[]; nextCursor: string | null }> {
  const page = await pageById<FileDbRow>(tx, "files", { tenant_id: tenantId }, q);
  return { files: page.rows.map(toFile), nextCursor: page.nextCursor };
}

/** Deletes one of the tenant's files' row and answers it (the caller then removes its bytes), or null. */
export async function deleteFile(tx: Tx, tenantId: string, id: string): Promise<FileRow | null> {
  const row = await tx.get<FileDbRow>(`SELECT * FROM files WHERE tenant_id = ? AND id = ?${tx.d.forUpdate}`, [
    tenantId,
    id,
  ]);
  if (!row) return null;
  await tx.run("DELETE FROM files WHERE id = ?", [id]);
  await deleteFileChunks(tx, tenantId, id);
  return toFile(row);
}

/** The most keys `namedBlobKeys` takes at once: two placeholders each, far below either dialect's cap. */
export const NAMED_BLOB_KEYS_PAGE = 500;

/** Which of `keys` a file's or an artifact's row names (the blob_key indexes, migration 021). */
export async function namedBlobKeys(tx: Tx, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  if (keys.length > NAMED_BLOB_KEYS_PAGE) throw new Error(`at most ${NAMED_BLOB_KEYS_PAGE} keys at once`);
  const marks = keys.map(() => "?").join(", ");
  const rows = await tx.all<{ blob_key: string }>(
    `SELECT blob_key FROM files WHERE blob_key IN (${marks})
     UNION SELECT blob_key FROM artifacts WHERE blob_key IN (${marks})`,
    [...keys, ...keys],
  );
  return new Set(rows.map((r) => r.blob_key));
}
