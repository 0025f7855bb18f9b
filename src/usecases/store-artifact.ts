import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type { BlobStore } from "../blobs/blob-store.ts";
import { type ArtifactInfo, artifactBlobKey, artifactInfo } from "../core/artifact.ts";
import type { Clock } from "../core/clock.ts";
import { type ErrorInfo, LonghaulError, nonRetriable } from "../core/errors.ts";
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
 * before any row names them (ARCHITECTURE §3.8). A stream that breaks leaves nothing, and so
 * does one past `maxBytes` (`limits.file_max_bytes`): ARTIFACT_TOO_LARGE, final for the step.
 */
export async function writeArtifact(
  d: { blobs: BlobStore; maxBytes?: number | undefined },
  a: { tenantId: string; taskId: string; data: ArtifactData },
): Promise<WrittenArtifact> {
  const blobKey = artifactBlobKey(a.tenantId, a.taskId, randomUUID());
  const body = artifactBody(a.data);
  const stored = await d.blobs.put(blobKey, d.maxBytes === undefined ? body : capped(body, d.maxBytes));
  return { blobKey, size: stored.size, sha256: stored.sha256 };
}

/**
 * The body, failing with ARTIFACT_TOO_LARGE as soon as it passes `maxBytes`: counted here rather
 * than by the blob store's cap, so the step's error says artifact and the body's own errors
 * (a file read past its cap, say) keep theirs. The blob store abandons the write either way.
 */
async function* capped(
  body: AsyncIterable<Uint8Array | string>,
  maxBytes: number,
): AsyncGenerator<Uint8Array> {
  let count = 0;
  for await (const chunk of body) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    count += bytes.length;
    if (count > maxBytes) {
      throw nonRetriable(
        new LonghaulError(
          "ARTIFACT_TOO_LARGE",
          `The artifact is larger than the limit of ${maxBytes} bytes (limits.file_max_bytes); nothing was kept.`,
          { details: { limit_bytes: maxBytes } },
        ),
      );
    }
    yield bytes;
  }
}

/**
 * Records a written artifact and its step's outcome in one transaction. When the task already
 * has an artifact of that name (a write that was stored, then raced), that one is answered and
 * the new bytes are removed; when the row was not written (a lost lease), they are removed too.
 * Past the tenant's storage quota (`storageQuotaBytes`, counted with its files), the step is
 * stored failed in that transaction and its error answered as `refused`; the bytes are removed.
 */
export async function recordArtifact(
  d: { store: ArtifactStore; blobs: BlobStore; clock: Clock; storageQuotaBytes?: number | undefined },
  a: { lease: Lease; tenantId: string; taskId: string; artifact: ArtifactToStore },
): Promise<ArtifactInfo | { refused: ErrorInfo }> {
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
      d.storageQuotaBytes === undefined ? {} : { storageQuotaBytes: d.storageQuotaBytes },
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
  if ("refused" in r) {
    await d.blobs.delete(blobKey).catch(() => {});
    return r;
  }
  if (!r.created) await d.blobs.delete(blobKey).catch(() => {});
  return artifactInfo(r.artifact);
}
