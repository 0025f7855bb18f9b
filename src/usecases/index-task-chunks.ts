import {
  type ChunkDraft,
  MAX_CHUNK_CHARS,
  MAX_CHUNKS_PER_TASK,
  type NewChunk,
  type TaskIndex,
} from "../core/chunk.ts";
import { LonghaulError, nonRetriable } from "../core/errors.ts";
import type { TaskInfo } from "../core/task-type.ts";
import { type Embedder, embedChecked } from "../search/embedder.ts";
import type { ChunkStore } from "../store/store.ts";

/**
 * The `ctx.index` of a task: `put` checks the chunks, embeds them all, then replaces the
 * task's chunks in one transaction, so a search sees the whole set or none and a step run
 * again leaves one copy. A bad chunk or a wrong answer from the embedder fails before anything
 * is written, and without retry: running again cannot change it.
 */
export function taskIndex(
  d: { chunks: Pick<ChunkStore, "replaceTaskChunks">; embedder: Embedder },
  task: TaskInfo,
): TaskIndex {
  return {
    async put(drafts: readonly ChunkDraft[]) {
      checkDrafts(drafts);
      const vectors = await embedChecked(
        d.embedder,
        drafts.map((c) => c.text),
      ).catch((err: unknown) => {
        throw err instanceof LonghaulError ? nonRetriable(err) : err;
      });
      const rows: NewChunk[] = drafts.map((c, i) => ({
        id: `${task.taskId}:${i}`,
        position: i,
        text: c.text,
        source: c.source,
        fileId: c.fileId ?? null,
        metadata: c.metadata ?? {},
        embedding: vectors[i]!,
      }));
      const n = await d.chunks.replaceTaskChunks(
        { tenantId: task.tenantId, taskId: task.taskId, taskType: task.type },
        { name: d.embedder.name, dimensions: d.embedder.dimensions },
        rows,
      );
      return { chunks: n, embedder: d.embedder.name, dimensions: d.embedder.dimensions };
    },
  };
}

/** The longest metadata of one chunk, as JSON. */
const MAX_METADATA_CHARS = 4096;

function checkDrafts(drafts: readonly ChunkDraft[]): void {
  const refuse = (message: string) => {
    throw nonRetriable(new LonghaulError("CHUNKS_INVALID", message));
  };
  if (drafts.length > MAX_CHUNKS_PER_TASK)
    refuse(`At most ${MAX_CHUNKS_PER_TASK} chunks per task; got ${drafts.length}.`);
  drafts.forEach((c, i) => {
    if (typeof c.text !== "string" || c.text.trim().length === 0) refuse(`Chunk ${i} has no text.`);
    if (c.text.length > MAX_CHUNK_CHARS) refuse(`Chunk ${i} is longer than ${MAX_CHUNK_CHARS} characters.`);
    const lines = c.source?.lines;
    if (
      lines &&
      !(
        Number.isInteger(lines.start) &&
        Number.isInteger(lines.end) &&
        1 <= lines.start &&
        lines.start <= lines.end
      )
    ) {
      refuse(`Chunk ${i} has a line range that is not 1 ≤ start ≤ end.`);
    }
    const page = c.source?.page;
    if (page !== undefined && !(Number.isInteger(page) && page >= 1))
      refuse(`Chunk ${i} has a page that is not an integer of at least 1.`);
    if (
      c.metadata !== undefined &&
      (typeof c.metadata !== "object" || c.metadata === null || Array.isArray(c.metadata))
    ) {
      refuse(`Chunk ${i}'s metadata is not an object.`);
    }
    if (c.metadata !== undefined && JSON.stringify(c.metadata).length > MAX_METADATA_CHARS) {
      refuse(`Chunk ${i}'s metadata is longer than ${MAX_METADATA_CHARS} characters as JSON.`);
    }
    if (c.fileId !== undefined && c.fileId !== null && typeof c.fileId !== "string") {
      refuse(`Chunk ${i}'s fileId is not a string.`);
    }
  });
}
