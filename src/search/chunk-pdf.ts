import { type ChunkOptions, chunkDocument, type TextChunk } from "./chunk-document.ts";

/**
 * Chunks a PDF's pages (`pdfPages`), page by page: a chunk never spans two pages, so each names
 * its page, and its lines are the lines of that page's extracted text. Options as for prose.
 */
export function chunkPdfPages(pages: readonly string[], opts: Omit<ChunkOptions, "kind"> = {}): TextChunk[] {
  const out: TextChunk[] = [];
  for (const [i, text] of pages.entries()) {
    for (const c of chunkDocument(text, { ...opts, kind: "prose" })) {
      out.push({ text: c.text, source: { ...c.source, page: i + 1 } });
    }
  }
  return out;
}
