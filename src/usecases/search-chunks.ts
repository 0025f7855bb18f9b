import { type ChunkFilter, type ChunkRow, METADATA_KEY, type SearchMode } from "../core/chunk.ts";
import { LonghaulError } from "../core/errors.ts";
import type { Embedder } from "../search/embedder.ts";
import { embedChecked } from "../search/embedder.ts";
import { queryTerms } from "../search/query-terms.ts";
import { reciprocalRankFusion } from "../search/rank-fusion.ts";
import type { ChunkStore } from "../store/store.ts";

export interface SearchQuery {
  query: string;
  k: number;
  mode: SearchMode;
  filter: ChunkFilter;
}

export interface SearchHit {
  score: number;
  chunk: ChunkRow;
}

/** Rows read per page of the exact scan: bounds its memory at a page of vectors and the top list. */
export const SCAN_PAGE = 1000;

/**
 * Searches the tenant's chunks, best first. `vector`: an exact scan of every vector of the
 * deployment's embedder (cosine, as the vectors are normalised), a page at a time; `keyword`:
 * the full-text index, any of the query's words; `hybrid`: both lists fused by reciprocal
 * rank. A tenant with no chunks, or a query with no words, answers an empty list.
 */
export async function searchChunks(
  d: { chunks: ChunkStore; embedder: Embedder },
  tenantId: string,
  q: SearchQuery,
): Promise<SearchHit[]> {
  for (const key of Object.keys(q.filter.metadata ?? {})) {
    if (!METADATA_KEY.test(key)) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        "A metadata filter key is letters, digits, _ and -, 1 to 64 of them.",
        {
          param: "filter.metadata",
        },
      );
    }
  }
  // Hybrid fuses longer lists than it answers, so a chunk second in both can still rise.
  const depth = q.mode === "hybrid" ? Math.min(200, Math.max(50, q.k * 4)) : q.k;
  const vector = q.mode === "keyword" ? [] : await vectorSearch(d, tenantId, q, depth);
  const keyword =
    q.mode === "vector"
      ? []
      : await d.chunks.keywordChunks(tenantId, {
          terms: queryTerms(q.query),
          filter: q.filter,
          limit: depth,
        });
  const ranked =
    q.mode === "vector"
      ? vector
      : q.mode === "keyword"
        ? keyword
        : reciprocalRankFusion([vector.map((h) => h.seq), keyword.map((h) => h.seq)]).map((r) => ({
            seq: r.key,
            score: r.score,
          }));
  const top = ranked.slice(0, q.k);
  const rows = new Map(
    (
      await d.chunks.chunksBySeq(
        tenantId,
        top.map((h) => h.seq),
      )
    ).map((c) => [c.seq, c]),
  );
  // A chunk removed between the ranking and this read (its file deleted) is left out.
  return top.flatMap((h) => {
    const chunk = rows.get(h.seq);
    return chunk ? [{ score: h.score, chunk }] : [];
  });
}

/** The exact scan: every vector of the embedder's, dot product with the query's, the best `n` kept. */
async function vectorSearch(
  d: { chunks: ChunkStore; embedder: Embedder },
  tenantId: string,
  q: SearchQuery,
  n: number,
): Promise<{ seq: number; score: number }[]> {
  const [query] = await embedChecked(d.embedder, [q.query]);
  if (!query?.some((x) => x !== 0)) return [];
  const best = new TopList(n);
  let afterSeq = 0;
  for (;;) {
    const page = await d.chunks.chunkVectorPage(tenantId, {
      embedder: d.embedder.name,
      dims: d.embedder.dimensions,
      filter: q.filter,
      afterSeq,
      limit: SCAN_PAGE,
    });
    for (const row of page) best.offer(row.seq, dot(query, row.embedding));
    if (page.length < SCAN_PAGE) break;
    afterSeq = page[page.length - 1]!.seq;
  }
  // A vector with nothing in common with the query is no answer.
  return best.sorted().filter((h) => h.score > 0);
}

export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** The `n` highest scores seen, ties to the lower seq (the older chunk): a sorted array, n ≤ 200. */
class TopList {
  private readonly items: { seq: number; score: number }[] = [];
  constructor(private readonly n: number) {}
  offer(seq: number, score: number): void {
    const items = this.items;
    if (items.length === this.n && score <= items[items.length - 1]!.score) return;
    let i = items.length;
    while (i > 0 && items[i - 1]!.score < score) i--;
    items.splice(i, 0, { seq, score });
    if (items.length > this.n) items.pop();
  }
  sorted(): { seq: number; score: number }[] {
    return this.items;
  }
}
