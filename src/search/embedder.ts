import { LonghaulError } from "../core/errors.ts";

/**
 * Turns texts into vectors of one fixed length. The local `hashed-ngram` embedder implements
 * it; a provider's embedding model can later, behind the same three members.
 */
export interface Embedder {
  /** Stored with each vector: vectors of different embedders are never compared. */
  readonly name: string;
  readonly dimensions: number;
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

/**
 * Embeds `texts` and checks the answer: one vector per text, each of the declared length, all
 * finite. Anything else is EMBEDDING_DIMENSION_MISMATCH, thrown before anything is stored.
 */
export async function embedChecked(embedder: Embedder, texts: readonly string[]): Promise<Float32Array[]> {
  const vectors = await embedder.embed(texts);
  if (vectors.length !== texts.length) {
    throw new LonghaulError(
      "EMBEDDING_DIMENSION_MISMATCH",
      `The embedder ${embedder.name} answered ${vectors.length} vectors for ${texts.length} texts.`,
    );
  }
  vectors.forEach((v, i) => {
    if (v.length !== embedder.dimensions) {
      throw new LonghaulError(
        "EMBEDDING_DIMENSION_MISMATCH",
        `The embedder ${embedder.name} declares ${embedder.dimensions} dimensions but answered ${v.length} for text ${i}.`,
        { details: { expected: embedder.dimensions, got: v.length, index: i } },
      );
    }
    if (!v.every(Number.isFinite)) {
      throw new LonghaulError(
        "EMBEDDING_DIMENSION_MISMATCH",
        `The embedder ${embedder.name} answered a vector with a value that is not a finite number for text ${i}.`,
        { details: { index: i } },
      );
    }
  });
  return vectors;
}
