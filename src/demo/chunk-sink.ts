import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Where `rag_summary` stores its chunks. Writes must be idempotent: a step may run again. */
export interface ChunkSink {
  put(taskId: string, chunks: { id: string; text: string }[]): Promise<{ location: string }>;
}

/** Stores chunks as one JSON Lines file per task under `dir`; rewriting the same file is idempotent. */
export function fileChunkSink(dir: string): ChunkSink {
  return {
    async put(taskId, chunks) {
      await mkdir(dir, { recursive: true });
      const file = join(dir, `${taskId}.jsonl`);
      await writeFile(file, `${chunks.map((c) => JSON.stringify(c)).join("\n")}\n`);
      return { location: file };
    },
  };
}
