/**
 * Chunks of a task's documents, indexed for search (README "Search"). A chunk is a piece of
 * text with where it came from; the index stores it with its embedding, scoped by tenant.
 */

/** Where a chunk's text lies in its document: 1-based, inclusive line numbers; a page for PDFs. */
export interface SourceSpan {
  lines?: { start: number; end: number };
  /** Reserved for paged documents (PDFs); text and code chunks have none. */
  page?: number;
}

/** A chunk as the chunker makes it and a task hands it to the index. */
export interface ChunkDraft {
  text: string;
  source: SourceSpan;
  /** The tenant's file the text came from, when it came from one. */
  fileId?: string | null;
  /** Small JSON object kept with the chunk; string values can be filtered on. */
  metadata?: Record<string, unknown>;
}

/** The `ctx.index` of a task: its chunks, embedded and stored for `POST /v1/search`. */
export interface TaskIndex {
  /**
   * Replaces the task's chunks with `chunks`, embedded, in one transaction: a search sees all
   * of them or none, and calling it again (a step run again) leaves one copy, not two.
   */
  put(chunks: readonly ChunkDraft[]): Promise<{ chunks: number; embedder: string; dimensions: number }>;
}

/** A stored chunk, as a search answers it. */
export interface ChunkRow {
  /** The index's own row number, in insertion order: how scans page. */
  seq: number;
  id: string;
  tenantId: string;
  taskId: string;
  taskType: string;
  fileId: string | null;
  position: number;
  source: SourceSpan;
  text: string;
  metadata: Record<string, unknown>;
}

/** A chunk to store: the draft with its task, its id and its vector. */
export interface NewChunk {
  id: string;
  position: number;
  text: string;
  source: SourceSpan;
  fileId: string | null;
  metadata: Record<string, unknown>;
  embedding: Float32Array;
}

export const searchModes = ["vector", "keyword", "hybrid"] as const;
export type SearchMode = (typeof searchModes)[number];

/** What a search may be narrowed to; every field given must match. */
export interface ChunkFilter {
  taskId?: string | undefined;
  taskType?: string | undefined;
  fileId?: string | undefined;
  /** Metadata keys and the string each must equal. */
  metadata?: Record<string, string> | undefined;
}

/** The most chunks one task may index, and the longest text of one chunk (characters). */
export const MAX_CHUNKS_PER_TASK = 10_000;
export const MAX_CHUNK_CHARS = 32_000;

/** A metadata key a filter may name: plain, so it can be spelled into a JSON path safely. */
export const METADATA_KEY = /^[A-Za-z0-9_-]{1,64}$/;
