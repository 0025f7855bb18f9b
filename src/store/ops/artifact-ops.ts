import type { ArtifactRow } from "../../core/artifact.ts";
import { artifactInfo } from "../../core/artifact.ts";
import { toErrorInfo } from "../../core/errors.ts";
import { type ArtifactDbRow, toArtifact } from "../rows.ts";
import type { Tx } from "../sql/tx.ts";
import type { Lease, StoredArtifact } from "../store.ts";
import { storeRunOutcome } from "./advance-ops.ts";
import { checkStorageQuota } from "./file-ops.ts";
import { assertLease } from "./queue-ops.ts";
import { lockTask } from "./task-ops.ts";

/*
 * Artifacts' rows, written once for both dialects (src/core/artifact.ts). The bytes are the
 * blob store's; these operations never touch them. The primary key (task_id, name) keeps one
 * artifact per name.
 */

/**
 * Records an artifact and the outcome of its step in one transaction (the step's output is
 * the artifact's `ArtifactInfo`). Locks: the task, before anything is written, then the tenant
 * when a storage quota applies. When the task already has an artifact of that name, nothing is
 * inserted and that one is answered with `created: false`: the caller then removes the new
 * bytes. When the artifact would take the tenant's files and artifacts past its storage quota,
 * no row is inserted and the step is stored failed with STORAGE_QUOTA_EXCEEDED (`refused`): the
 * caller removes the bytes, and the task code sees the step's failure.
 */
export async function storeArtifact(
  tx: Tx,
  lease: Lease,
  step: { stepId: string; position: number; attempts: number },
  a: ArtifactRow,
  opts: { storageQuotaBytes?: number } = {},
): Promise<StoredArtifact> {
  await assertLease(tx, lease);
  await lockTask(tx, a.taskId);
  if (opts.storageQuotaBytes !== undefined && !(await getArtifact(tx, a.tenantId, a.taskId, a.name))) {
    try {
      await checkStorageQuota(tx, a.tenantId, a.size, opts.storageQuotaBytes);
    } catch (err) {
      const error = toErrorInfo(err);
      if (error.code !== "STORAGE_QUOTA_EXCEEDED") throw err;
      await storeRunOutcome(tx, lease, a.taskId, { ...step, status: "failed", error });
      return { refused: error };
    }
  }
  const inserted = await tx.run(
    `INSERT INTO artifacts (task_id, tenant_id, name, content_type, size, sha256, blob_key, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (task_id, name) DO NOTHING`,
    [a.taskId, a.tenantId, a.name, a.contentType, a.size, a.sha256, a.blobKey, a.createdAt],
  );
  const artifact =
    inserted === 1 ? a : await getArtifact(tx, a.tenantId, a.taskId, a.name).then((r) => r ?? a);
  await storeRunOutcome(tx, lease, a.taskId, {
    stepId: step.stepId,
    position: step.position,
    status: "succeeded",
    output: artifactInfo(artifact),
    attempts: step.attempts,
  });
  return { artifact, created: inserted === 1 };
}

/** One of the task's artifacts, or null: another tenant's task reads as none. */
export async function getArtifact(
  tx: Tx,
  tenantId: string,
  taskId: string,
  name: string,
): Promise<ArtifactRow | null> {
  const row = await tx.get<ArtifactDbRow>(
    "SELECT * FROM artifacts WHERE task_id = ? AND tenant_id = ? AND name = ?",
    [taskId, tenantId, name],
  );
  return row ? toArtifact(row) : null;
}
