import type { SearchMode } from "../core/chunk.ts";
import type { Embedder } from "../search/embedder.ts";
import type { ChunkStore } from "../store/store.ts";
import { searchChunks } from "../usecases/search-chunks.ts";
import { SearchAnswer, SearchRequest } from "../wire/search.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

/**
 * `POST /v1/search`: the caller's tenant's chunks, best first (README "Search"). A tenant with
 * no chunks answers an empty list, as a query that matches nothing does.
 */
export function searchRoutes(app: Api, d: { store: ChunkStore; embedder: Embedder }): void {
  const schema = operation("Search the tenant's indexed chunks: vector, keyword or hybrid", {
    body: SearchRequest,
    response: { 200: SearchAnswer },
  });
  app.post("/v1/search", { schema }, async (req) => {
    const mode: SearchMode = req.body.mode ?? "hybrid";
    const f = req.body.filter ?? {};
    const hits = await searchChunks({ chunks: d.store, embedder: d.embedder }, req.tenant.id, {
      query: req.body.query,
      k: req.body.k ?? 10,
      mode,
      filter: { taskId: f.task_id, taskType: f.task_type, fileId: f.file_id, metadata: f.metadata },
    });
    return {
      mode,
      data: hits.map(({ score, chunk: c }) => ({
        score,
        text: c.text,
        chunk_id: c.id,
        task_id: c.taskId,
        task_type: c.taskType,
        file_id: c.fileId,
        source: c.source,
        metadata: c.metadata,
      })),
    };
  });
}
