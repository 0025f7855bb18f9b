/**
 * Splits one long run of text into pieces of at most `size` characters, breaking at a
 * paragraph, sentence or word boundary where one lies in the window's second half, with
 * `overlap` characters repeated between neighbours so a sentence cut in two is whole in one.
 */
export function splitLong(text: string, size: number, overlap: number): string[] {
  const clean = text.trim();
  if (clean.length === 0) return [];
  const pieces: string[] = [];
  let start = 0;
  while (start < clean.length) {
    let end = Math.min(clean.length, start + size);
    if (end < clean.length) {
      const window = clean.slice(start, end);
      const cut = Math.max(window.lastIndexOf("\n\n"), window.lastIndexOf(". "), window.lastIndexOf(" "));
      if (cut > size / 2) end = start + cut + 1;
    }
    const piece = clean.slice(start, end).trim();
    if (piece.length > 0) pieces.push(piece);
    if (end >= clean.length) break;
    start = Math.max(end - overlap, start + 1);
  }
  return pieces;
}
