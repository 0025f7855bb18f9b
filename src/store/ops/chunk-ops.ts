import type { ChunkFilter, ChunkRow, NewChunk, SourceSpan } from "../../core/chunk.ts";
import { json, parseJson } from "../json.ts";
import type { Tx } from "../sql/tx.ts";

/*
 * The chunks index (migration 023, src/core/chunk.ts), written once for both dialects except
 * keyword search: SQLite's FTS5 `MATCH` against PostgreSQL's tsvector `@@`. Every statement
 * names the tenant.
 */

interface ChunkDbRow {
  seq: number | string;
  id: string;
  tenant_id: string;
  task_id: string;
  task_type: string;
  file_id: string | null;
  ordinal: number;
  line_start: number | null;
  line_end: number | null;
  page: number | null;
  text: string;
  metadata: string;
}

const toChunk = (r: ChunkDbRow): ChunkRow => {
  const source: SourceSpan = {};
  if (r.line_start !== null && r.line_end !== null) {
    source.lines = { start: Number(r.line_start), end: Number(r.line_end) };
  }
  if (r.page !== null) source.page = Number(r.page);
  return {
    seq: Number(r.seq),
    id: r.id,
    tenantId: r.tenant_id,
    taskId: r.task_id,
    taskType: r.task_type,
    fileId: r.file_id,
    position: Number(r.ordinal),
    source,
    text: r.text,
    metadata: parseJson<Record<string, unknown>>(r.metadata) ?? {},
  };
};

/** Float32 values as bytes, little-endian as every platform Node runs on stores them. */
export const vectorBytes = (v: Float32Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);

/** Bytes back to a Float32Array: a view when aligned, else a copy (drivers pool their buffers). */
export function bytesVector(b: Uint8Array): Float32Array {
  if (b.byteOffset % 4 === 0) return new Float32Array(b.buffer, b.byteOffset, b.byteLength >> 2);
  return new Float32Array(b.slice().buffer, 0, b.byteLength >> 2);
}

/** Rows per INSERT statement of `replaceTaskChunks`. */
export const INSERT_BATCH = 200;

/**
 * Replaces the task's chunks with `chunks`, in the caller's one transaction: the old rows go
 * and the new come in together, so a search sees either set whole and a step run again
 * leaves one copy. Answers how many rows were written.
 */
export async function replaceTaskChunks(
  tx: Tx,
  task: { tenantId: string; taskId: string; taskType: string },
  embedder: { name: string; dimensions: number },
  chunks: readonly NewChunk[],
): Promise<number> {
  await tx.run("DELETE FROM chunks WHERE tenant_id = ? AND task_id = ?", [task.tenantId, task.taskId]);
  const now = tx.clock.now();
  // Rows go in INSERT_BATCH at a time: one statement (one round trip on PostgreSQL) per batch,
  // 15 parameters a row, far below either dialect's cap.
  for (let at = 0; at < chunks.length; at += INSERT_BATCH) {
    const batch = chunks.slice(at, at + INSERT_BATCH);
    await tx.run(
      `INSERT INTO chunks (tenant_id, id, task_id, task_type, file_id, ordinal, line_start, line_end, page,
                           text, metadata, embedder, dims, embedding, created_at)
       VALUES ${batch.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
      batch.flatMap((c) => [
        task.tenantId,
        c.id,
        task.taskId,
        task.taskType,
        c.fileId,
        c.position,
        c.source.lines?.start ?? null,
        c.source.lines?.end ?? null,
        c.source.page ?? null,
        c.text,
        json(c.metadata),
        embedder.name,
        embedder.dimensions,
        vectorBytes(c.embedding),
        now,
      ]),
    );
  }
  return chunks.length;
}

/** Removes the chunks of one of the tenant's files (its deletion, in the same transaction). */
export function deleteFileChunks(tx: Tx, tenantId: string, fileId: string): Promise<number> {
  return tx.run("DELETE FROM chunks WHERE tenant_id = ? AND file_id = ?", [tenantId, fileId]);
}

/** ` AND …` for a filter, with its parameters, over the columns of `chunks` aliased `c`. */
function filterSql(tx: Tx, f: ChunkFilter): { sql: string; params: unknown[] } {
  let sql = "";
  const params: unknown[] = [];
  if (f.taskId !== undefined) {
    sql += " AND c.task_id = ?";
    params.push(f.taskId);
  }
  if (f.taskType !== undefined) {
    sql += " AND c.task_type = ?";
    params.push(f.taskType);
  }
  if (f.fileId !== undefined) {
    sql += " AND c.file_id = ?";
    params.push(f.fileId);
  }
  for (const [key, value] of Object.entries(f.metadata ?? {})) {
    // Keys are plain (METADATA_KEY) and bound as parameters all the same.
    if (tx.d.name === "sqlite") {
      sql += " AND json_extract(c.metadata, ?) = ?";
      params.push(`$."${key}"`, value);
    } else {
      sql += " AND (c.metadata::jsonb ->> ?::text) = ?";
      params.push(key, value);
    }
  }
  return { sql, params };
}

/**
 * One page of the tenant's vectors made by `embedder` with `dims` dimensions, after `afterSeq`
 * in seq order: what the exact scan reads, a page at a time, so its memory stays bounded.
 */
export async function chunkVectorPage(
  tx: Tx,
  tenantId: string,
  q: { embedder: string; dims: number; filter: ChunkFilter; afterSeq: number; limit: number },
): Promise<{ seq: number; embedding: Float32Array }[]> {
  const f = filterSql(tx, q.filter);
  const rows = await tx.all<{ seq: number | string; embedding: Uint8Array }>(
    `SELECT c.seq, c.embedding FROM chunks c
     WHERE c.tenant_id = ? AND c.seq > ? AND c.embedder = ? AND c.dims = ?${f.sql}
     ORDER BY c.seq LIMIT ?`,
    [tenantId, q.afterSeq, q.embedder, q.dims, ...f.params, q.limit],
  );
  return rows.map((r) => ({ seq: Number(r.seq), embedding: bytesVector(r.embedding) }));
}

/**
 * The tenant's chunks that hold any of `terms` (plain words: letters, marks and digits
 * only, so nothing in them is query syntax), best first: SQLite's BM25 (negated, so higher is better)
 * or PostgreSQL's ts_rank. Scores compare within one answer only.
 */
export async function keywordChunks(
  tx: Tx,
  tenantId: string,
  q: { terms: readonly string[]; filter: ChunkFilter; limit: number },
): Promise<{ seq: number; score: number }[]> {
  if (q.terms.length === 0) return [];
  const f = filterSql(tx, q.filter);
  let rows: { seq: number | string; score: number | string }[];
  if (tx.d.name === "sqlite") {
    // Each term a quoted FTS5 string, its quotes doubled: text, never an operator. The tenant's
    // id is matched as a phrase of its own column, so the index narrows to the tenant's rows
    // (the equality on c.tenant_id keeps exactly them: another id could hold the phrase);
    // bm25 weighs that column 0.
    const quote = (t: string) => `"${t.replaceAll('"', '""')}"`;
    const match = `tenant_id : ${quote(tenantId)} AND text : (${q.terms.map(quote).join(" OR ")})`;
    rows = await tx.all(
      `SELECT c.seq, -bm25(chunks_fts, 1.0, 0.0) AS score FROM chunks_fts JOIN chunks c ON c.seq = chunks_fts.rowid
       WHERE chunks_fts MATCH ? AND c.tenant_id = ?${f.sql}
       ORDER BY score DESC, c.seq LIMIT ?`,
      [match, tenantId, ...f.params, q.limit],
    );
  } else {
    // plainto_tsquery reads its text as words, never as syntax; `||` ORs the terms' queries.
    const query = q.terms.map(() => "plainto_tsquery('simple', ?)").join(" || ");
    rows = await tx.all(
      `SELECT c.seq, ts_rank(c.tsv, query.q) AS score FROM chunks c, (SELECT ${query} AS q) AS query
       WHERE c.tenant_id = ? AND c.tsv @@ query.q${f.sql}
       ORDER BY score DESC, c.seq LIMIT ?`,
      [...q.terms, tenantId, ...f.params, q.limit],
    );
  }
  return rows.map((r) => ({ seq: Number(r.seq), score: Number(r.score) }));
}

/** The tenant's chunks of `seqs`, in no order; another tenant's read as none. */
export async function chunksBySeq(tx: Tx, tenantId: string, seqs: readonly number[]): Promise<ChunkRow[]> {
  if (seqs.length === 0) return [];
  const rows = await tx.all<ChunkDbRow>(
    `SELECT seq, id, tenant_id, task_id, task_type, file_id, ordinal, line_start, line_end, page, text, metadata
     FROM chunks WHERE tenant_id = ? AND seq IN (${seqs.map(() => "?").join(", ")})`,
    [tenantId, ...seqs],
  );
  return rows.map(toChunk);
}

/** How many chunks the tenant has (all embedders). */
export async function countChunks(tx: Tx, tenantId: string, taskId?: string): Promise<number> {
  const row = await tx.get<{ n: number | string }>(
    `SELECT COUNT(*) AS n FROM chunks WHERE tenant_id = ?${taskId === undefined ? "" : " AND task_id = ?"}`,
    taskId === undefined ? [tenantId] : [tenantId, taskId],
  );
  return Number(row?.n ?? 0);
}
