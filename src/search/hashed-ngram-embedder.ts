import type { Embedder } from "./embedder.ts";

/**
 * `hashed-ngram`: a local, deterministic embedder with no model and no network. Each word of
 * the text (letters, combining marks and digits, lower-cased, NFKC) and each character trigram of each word
 * (with boundary marks, so short words and scripts without spaces, Chinese say, still share
 * features) is hashed (FNV-1a) into one of `dimensions` buckets with a hashed sign; the counts
 * are damped (square root) and the vector L2-normalised, so a dot product is a cosine.
 *
 * What it is: lexical similarity, robust to word order, inflection and small typos. What it
 * is not: semantic; synonyms and paraphrases with other words score low.
 */
export function hashedNgramEmbedder(dimensions = 384): Embedder {
  if (!Number.isInteger(dimensions) || dimensions < 16 || dimensions > 4096) {
    throw new RangeError("hashed-ngram dimensions must be an integer from 16 to 4096");
  }
  return {
    name: "hashed-ngram",
    dimensions,
    async embed(texts) {
      return texts.map((t) => embedOne(t, dimensions));
    },
  };
}

const WORD = /[\p{L}\p{M}\p{N}]+/gu;

function embedOne(text: string, dims: number): Float32Array {
  const counts = new Float64Array(dims);
  const add = (feature: string, weight: number) => {
    const h = fnv1a(feature);
    counts[h % dims]! += (h & 0x80000000) === 0 ? weight : -weight;
  };
  for (const [word] of text.normalize("NFKC").toLowerCase().matchAll(WORD)) {
    add(`w:${word}`, 1);
    const marked = `<${word}>`;
    for (let i = 0; i + 3 <= marked.length; i++) add(`c:${marked.slice(i, i + 3)}`, 0.5);
  }
  const v = new Float32Array(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    const c = counts[i]!;
    const damped = Math.sign(c) * Math.sqrt(Math.abs(c));
    v[i] = damped;
    norm += damped * damped;
  }
  if (norm > 0) {
    const inv = 1 / Math.sqrt(norm);
    for (let i = 0; i < dims; i++) v[i]! *= inv;
  }
  return v;
}

/** 32-bit FNV-1a over the UTF-16 code units: fast, stable across platforms and versions. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
