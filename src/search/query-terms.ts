/**
 * The words of a query, for keyword search: runs of letters, combining marks and digits (so no
 * operator or quote survives), lower-cased, each once, at most `max`.
 */
export function queryTerms(query: string, max = 32): string[] {
  const seen = new Set<string>();
  for (const [word] of query.normalize("NFKC").matchAll(/[\p{L}\p{M}\p{N}]+/gu)) {
    seen.add(word.toLowerCase());
    if (seen.size >= max) break;
  }
  return [...seen];
}
