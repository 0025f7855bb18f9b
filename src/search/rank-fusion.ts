/** The constant of reciprocal rank fusion: 60, as in Cormack, Clarke and Büttcher (2009). */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion: each key scores the sum, over the lists it appears in, of
 * 1 / (RRF_K + its 1-based rank there). Best first; ties keep the first list's order.
 */
export function reciprocalRankFusion<K>(lists: readonly (readonly K[])[]): { key: K; score: number }[] {
  const scores = new Map<K, number>();
  for (const list of lists) {
    list.forEach((key, i) => {
      scores.set(key, (scores.get(key) ?? 0) + 1 / (RRF_K + i + 1));
    });
  }
  return [...scores].map(([key, score]) => ({ key, score })).sort((a, b) => b.score - a.score);
}
