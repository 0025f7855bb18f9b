import type { Readable } from "node:stream";
import type { BlobStore, ByteRange } from "../blobs/blob-store.ts";
import { type ArtifactRow, artifactNotFound } from "../core/artifact.ts";
import type { ArtifactStore } from "../store/store.ts";

/** One of a task's artifacts; another tenant's task, or a name it has none of, is `ARTIFACT_NOT_FOUND`. */
export async function getArtifact(
  d: { artifacts: ArtifactStore },
  g: { tenantId: string; taskId: string; name: string },
): Promise<ArtifactRow> {
  const artifact = await d.artifacts.getArtifact(g.tenantId, g.taskId, g.name);
  if (!artifact) throw artifactNotFound(g.taskId, g.name);
  return artifact;
}

/**
 * An artifact's bytes, whole or a range of them (`RANGE_NOT_SATISFIABLE` outside it). Bytes
 * missing under a row (removed behind longhaul's back) read as `ARTIFACT_NOT_FOUND`.
 */
export async function readArtifactContent(
  d: { blobs: BlobStore },
  artifact: ArtifactRow,
  range?: ByteRange,
): Promise<Readable> {
  try {
    return await d.blobs.get(artifact.blobKey, range);
  } catch (err) {
    if ((err as { code?: string }).code === "BLOB_NOT_FOUND")
      throw artifactNotFound(artifact.taskId, artifact.name);
    throw err;
  }
}
