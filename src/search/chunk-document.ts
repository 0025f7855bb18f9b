import type { SourceSpan } from "../core/chunk.ts";
import { splitLong } from "./split-long.ts";
import { codeUnits, proseUnits, type Unit } from "./structure-units.ts";

export type DocumentKind = "prose" | "code";

export interface ChunkOptions {
  /** `prose` (text and Markdown, the default) or `code` (TypeScript, JavaScript, Python). */
  kind?: DocumentKind;
  /** The most characters of one chunk. Default 800. */
  size?: number;
  /** Characters of the previous chunk repeated at the start of the next, whole lines. Default 100. */
  overlap?: number;
}

export interface TextChunk {
  text: string;
  source: SourceSpan;
}

/**
 * Cuts a document into chunks along its structure: units (headings, paragraphs, fenced
 * blocks; or top-level definitions for code) are packed in order into chunks of at most
 * `size` characters; a heading starts a new chunk; a unit longer than `size` is cut by lines,
 * and a line longer than `size` at sentence or word boundaries. Each chunk is a range of the
 * document's lines, which its span names; `overlap` repeats the last whole lines of a chunk
 * (up to that many characters) at the start of the next within one section.
 */
export function chunkDocument(document: string, opts: ChunkOptions = {}): TextChunk[] {
  const size = opts.size ?? 800;
  const overlap = opts.overlap ?? 100;
  if (!Number.isInteger(size) || size < 16)
    throw new RangeError("chunk size must be an integer of at least 16");
  if (!Number.isInteger(overlap) || overlap < 0 || overlap >= size) {
    throw new RangeError("chunk overlap must be an integer from 0 to less than the size");
  }
  const lines = document.replace(/\r\n?/g, "\n").split("\n");
  const units = (opts.kind === "code" ? codeUnits : proseUnits)(lines);
  const lengthOf = (start: number, end: number) => {
    let n = end - start;
    for (let i = start; i <= end; i++) n += lines[i - 1]!.length;
    return n;
  };
  const out: TextChunk[] = [];
  const emit = (start: number, end: number) => {
    const text = lines
      .slice(start - 1, end)
      .join("\n")
      .trim();
    if (text.length > 0) out.push({ text, source: { lines: { start, end } } });
  };
  let cur: { start: number; end: number } | null = null;
  // The first line the next chunk may start at, going back for overlap: never before the
  // previous chunk's start, nor across a heading.
  let floor = 1;
  const flush = () => {
    if (cur) emit(cur.start, cur.end);
    cur = null;
  };
  const overlapStart = (prev: { start: number; end: number }, next: number) => {
    let start = next;
    while (start - 1 > prev.start && start - 1 >= floor) {
      const candidate = start - 1;
      if (lengthOf(candidate, next - 1) > overlap) break;
      start = candidate;
    }
    while (start < next && lines[start - 1]!.trim().length === 0) start++;
    return start;
  };
  for (const u of units) {
    if (u.breakBefore) {
      flush();
      floor = u.start;
    }
    if (lengthOf(u.start, u.end) > size) {
      flush();
      cutLongUnit(u, lines, size, overlap, out);
      floor = u.end + 1;
      continue;
    }
    const open = cur as { start: number; end: number } | null;
    if (open === null) {
      cur = { start: u.start, end: u.end };
    } else if (lengthOf(open.start, u.end) <= size) {
      open.end = u.end;
    } else {
      flush();
      const start = overlapStart(open, u.start);
      cur = { start: lengthOf(start, u.end) <= size ? start : u.start, end: u.end };
    }
  }
  flush();
  return out;
}

/**
 * A unit longer than a chunk: whole lines packed up to `size`, the next piece starting with the
 * last lines of the one before (up to `overlap` characters); a longer line cut at boundaries.
 */
function cutLongUnit(
  u: Unit,
  lines: readonly string[],
  size: number,
  overlap: number,
  out: TextChunk[],
): void {
  const lengthOf = (start: number, end: number) => {
    let n = end - start;
    for (let i = start; i <= end; i++) n += lines[i - 1]!.length;
    return n;
  };
  const push = (from: number, to: number) => {
    const text = lines
      .slice(from - 1, to)
      .join("\n")
      .trim();
    if (text.length > 0) out.push({ text, source: { lines: { start: from, end: to } } });
  };
  let start = u.start;
  for (let n = u.start; n <= u.end; n++) {
    const line = lines[n - 1]!;
    if (line.length > size) {
      if (n > start) push(start, n - 1);
      for (const piece of splitLong(line, size, overlap)) {
        out.push({ text: piece, source: { lines: { start: n, end: n } } });
      }
      start = n + 1;
      continue;
    }
    if (n > start && lengthOf(start, n) > size) {
      push(start, n - 1);
      let next = n;
      while (next - 1 > start && lengthOf(next - 1, n) <= size && lengthOf(next - 1, n - 1) <= overlap)
        next--;
      start = next;
    }
  }
  if (start <= u.end) push(start, u.end);
}
