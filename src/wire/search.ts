import { Type } from "typebox";
import { Nullable, Text } from "./common.ts";

/** `POST /v1/search`. */
export const SearchRequest = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: 2000, description: "The text to search for" }),
    k: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, description: "How many results: 1 to 100, default 10" }),
    ),
    mode: Type.Optional(
      Type.Union([Type.Literal("vector"), Type.Literal("keyword"), Type.Literal("hybrid")], {
        description:
          "`vector` (exact cosine over the local embedder's vectors), `keyword` (full text, any of the words) or `hybrid` (both fused by reciprocal rank, k = 60); default hybrid",
      }),
    ),
    filter: Type.Optional(
      Type.Object(
        {
          task_id: Type.Optional(Text(255, "Chunks of this task only")),
          task_type: Type.Optional(Text(255, "Chunks of tasks of this type only")),
          file_id: Type.Optional(Text(255, "Chunks of this file only")),
          metadata: Type.Optional(
            Type.Record(Type.String(), Type.String({ maxLength: 1000 }), {
              propertyNames: { pattern: "^[A-Za-z0-9_-]{1,64}$" },
              maxProperties: 16,
              description: "Metadata keys (letters, digits, `_`, `-`) and the string each must equal",
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const SearchResult = Type.Object({
  score: Type.Number({
    description:
      "Higher is better: cosine for vector, the full-text rank for keyword, the fused score for hybrid",
  }),
  text: Type.String(),
  chunk_id: Type.String(),
  task_id: Type.String(),
  task_type: Type.String(),
  file_id: Nullable(Type.String()),
  source: Type.Object({
    lines: Type.Optional(
      Type.Object(
        { start: Type.Integer({ minimum: 1 }), end: Type.Integer({ minimum: 1 }) },
        { description: "1-based, inclusive" },
      ),
    ),
    page: Type.Optional(Type.Integer({ minimum: 1 })),
  }),
  metadata: Type.Record(Type.String(), Type.Unknown()),
});

export const SearchAnswer = Type.Object({
  data: Type.Array(SearchResult, { description: "Best first" }),
  mode: Type.Union([Type.Literal("vector"), Type.Literal("keyword"), Type.Literal("hybrid")]),
});
