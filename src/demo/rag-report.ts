import type { ReportSource, ReportSpec } from "../core/report.ts";
import type { TextChunk } from "../search/chunk-document.ts";

/** How many key points a report lists, each from a chunk spread evenly through the document. */
const KEY_POINTS = 5;
const KEY_POINT_MAX_CHARS = 240;

/** A chunk's first sentence (Latin or Chinese punctuation), or its start when it has none. */
function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  const m = flat.match(/^.+?[.!?。！？](?=\s|$|[^.!?。！？])/u);
  const s = m ? m[0] : flat;
  return s.length > KEY_POINT_MAX_CHARS ? `${s.slice(0, KEY_POINT_MAX_CHARS - 1)}…` : s;
}

function labelOf(c: TextChunk): string {
  const l = c.source.lines;
  const lines = l ? (l.start === l.end ? `line ${l.start}` : `lines ${l.start}-${l.end}`) : "";
  return c.source.page !== undefined
    ? `Page ${c.source.page}${lines ? `, ${lines}` : ""}`
    : lines || "Document";
}

/**
 * `rag_summary`'s report: its summary, key points taken from chunks spread evenly through the
 * document (the first sentence of each), and those chunks as sources, each cited by the id it
 * is indexed under (`<task>:<position>`, the id `POST /v1/search` answers), its page and lines.
 */
export function reportOf(a: {
  title: string;
  summary: string;
  chunks: readonly TextChunk[];
  taskId: string;
  fileId: string | null;
}): ReportSpec {
  const n = Math.min(KEY_POINTS, a.chunks.length);
  const picked = Array.from({ length: n }, (_, i) => Math.floor((i * a.chunks.length) / n));
  const keyPoints: string[] = [];
  const sources: ReportSource[] = [];
  for (const [i, position] of picked.entries()) {
    const c = a.chunks[position]!;
    keyPoints.push(`${firstSentence(c.text)} [${i + 1}]`);
    sources.push({
      label: labelOf(c),
      chunk_id: `${a.taskId}:${position}`,
      ...(a.fileId === null ? {} : { file_id: a.fileId }),
      ...(c.source.page === undefined ? {} : { page: c.source.page }),
      ...(c.source.lines === undefined ? {} : { lines: c.source.lines }),
    });
  }
  return { title: a.title, summary: a.summary, keyPoints, sources };
}
