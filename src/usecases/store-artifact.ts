import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type { BlobStore } from "../blobs/blob-store.ts";
import { type ArtifactInfo, artifactBlobKey, artifactInfo } from "../core/artifact.ts";
import type { Clock } from "../core/clock.ts";
import type { ArtifactToStore, WrittenArtifact } from "../core/replay-contract.ts";
import type { ArtifactData } from "../core/task-type.ts";
import type { ArtifactStore, Lease } from "../store/store.ts";

/** `step.artifact`'s data as the blob store reads it: text as UTF-8, bytes as one chunk, streams as they are. */
export function artifactBody(data: ArtifactData): Readable | AsyncIterable<Uint8Array> {
  if (typeof data === "string") return Readable.from([Buffer.from(data, "utf8")]);
  if (data instanceof Uint8Array) return Readable.from([data]);
  if (data instanceof Readable) return data;
  if (isWebStream(data)) return Readable.fromWeb(data as import("node:stream/web").ReadableStream);
  if (data && typeof (data as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function") {
    return Readable.from(data as AsyncIterable<Uint8Array | string>);
  }
  throw new TypeError(
    "step.artifact takes a string, a Uint8Array, a Readable, a ReadableStream or an async iterable of bytes.",
  );
}

const isWebStream = (v: unknown): v is ReadableStream<Uint8Array> =>
  typeof (v as ReadableStream | null)?.getReader === "function";

/**
 * Writes an artifact's bytes under a key of their own (`artifacts/<tenant>/<task>/<uuid>`),
 * before any row names them (ARCHITECTURE §3.8). A stream that breaks leaves nothing.
 */
export async function writeArtifact(
  d: { blobs: BlobStore },
  a: { tenantId: string; taskId: string; data: ArtifactData },
): Promise<WrittenArtifact> {
  const blobKey = artifactBlobKey(a.tenantId, a.taskId, randomUUID());
  const stored = await d.blobs.put(blobKey, artifactBody(a.data));
  return { blobKey, size: stored.size, sha256: stored.sha256 };
}

/**
 * Records a written artifact and its step's outcome in one transaction. When the task already
 * has an artifact of that name (a write that was stored, then raced), that one is answered and
 * the new bytes are removed; when the row was not written (a lost lease), they are removed too.
 */
export async function recordArtifact(
  d: { store: ArtifactStore; blobs: BlobStore; clock: Clock },
  a: { lease: Lease; tenantId: string; taskId: string; artifact: ArtifactToStore },
): Promise<ArtifactInfo> {
  const { stepId, position, attempts, name, contentType, blobKey, size, sha256 } = a.artifact;
  let r: Awaited<ReturnType<ArtifactStore["storeArtifact"]>>;
  try {
    r = await d.store.storeArtifact(
      a.lease,
      { stepId, position, attempts },
      {
        taskId: a.taskId,
        tenantId: a.tenantId,
        name,
        contentType,
        size,
        sha256,
        blobKey,
        createdAt: d.clock.now(),
      },
    );
  } catch (err) {
    // The transaction may have committed before the failure was seen (a connection lost on
    // COMMIT): the bytes are removed only when no row names them. Unsure, they are kept: bytes
    // no row names are harmless, a row without its bytes is not.
    const named = await d.store.getArtifact(a.tenantId, a.taskId, name).then(
      (row) => row?.blobKey === blobKey,
      () => true,
    );
    if (!named) await d.blobs.delete(blobKey).catch(() => {});
    throw err;
  }
  if (!r.created) await d.blobs.delete(blobKey).catch(() => {});
  return artifactInfo(r.artifact);
}
