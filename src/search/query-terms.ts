/** The words of a query, for keyword search: runs of letters and digits, at most `max`. */
export function queryTerms(query: string, max = 32): string[] {
  const seen = new Set<string>();
  for (const [word] of query.normalize("NFKC").matchAll(/[\p{L}\p{N}]+/gu)) {
    seen.add(word.toLowerCase());
    if (seen.size >= max) break;
  }
  return [...seen];
}
