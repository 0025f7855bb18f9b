import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { chunkDocument } from "../src/search/chunk-document.ts";
import { embedChecked } from "../src/search/embedder.ts";
import { hashedNgramEmbedder } from "../src/search/hashed-ngram-embedder.ts";
import { queryTerms } from "../src/search/query-terms.ts";
import { reciprocalRankFusion } from "../src/search/rank-fusion.ts";

/** The document's lines `start..end` (1-based, inclusive), joined and trimmed: what a chunk's span names. */
const linesOf = (doc: string, span: { start: number; end: number }) =>
  doc
    .split("\n")
    .slice(span.start - 1, span.end)
    .join("\n")
    .trim();

describe("chunkDocument", () => {
  const markdown = [
    "# Install", // 1
    "", // 2
    "Run npm install longhaul in your project.", // 3
    "It needs Node 20.", // 4
    "", // 5
    "## Configure", // 6
    "", // 7
    "Write longhaul.config.ts with your providers.", // 8
    "", // 9
    "```ts", // 10
    "# not a heading inside a fence", // 11
    "", // 12
    "export default defineConfig({});", // 13
    "```", // 14
    "", // 15
    "## Run", // 16
    "Start it with longhaul dev.", // 17
  ].join("\n");

  test("Markdown: each heading starts a chunk; a section's paragraphs and fenced block stay with it", () => {
    const chunks = chunkDocument(markdown, { size: 400, overlap: 0 });
    assert.deepEqual(
      chunks.map((c) => c.source.lines),
      [
        { start: 1, end: 4 },
        { start: 6, end: 14 },
        { start: 16, end: 17 },
      ],
    );
    for (const c of chunks) assert.equal(c.text, linesOf(markdown, c.source.lines!));
    assert.match(chunks[1]!.text, /# not a heading inside a fence/);
  });

  test("paragraphs are packed up to the size and never cut when they fit; spans are the chunk's lines", () => {
    const paras = Array.from({ length: 6 }, (_, i) => `Paragraph ${i} ${"word ".repeat(12).trim()}.`);
    const doc = paras.join("\n\n");
    const chunks = chunkDocument(doc, { size: 160, overlap: 0 });
    assert.ok(chunks.length >= 3, JSON.stringify(chunks));
    for (const c of chunks) {
      assert.ok(c.text.length <= 160, c.text);
      assert.equal(c.text, linesOf(doc, c.source.lines!));
      // Whole paragraphs only: a chunk starts at a paragraph's first line.
      assert.match(c.text, /^Paragraph \d/);
    }
    // Every paragraph is in some chunk.
    for (const p of paras)
      assert.ok(
        chunks.some((c) => c.text.includes(p)),
        p,
      );
  });

  test("overlap repeats the last whole lines of a chunk at the start of the next, within the size", () => {
    const lines = Array.from(
      { length: 40 },
      (_, i) => `line ${String(i + 1).padStart(2, "0")} of a long paragraph`,
    );
    const doc = lines.join("\n");
    const chunks = chunkDocument(doc, { size: 200, overlap: 60 });
    assert.ok(chunks.length >= 4);
    for (let i = 1; i < chunks.length; i++) {
      const prev = chunks[i - 1]!.source.lines!;
      const cur = chunks[i]!.source.lines!;
      assert.ok(cur.start <= prev.end, `chunk ${i} overlaps the one before: ${JSON.stringify([prev, cur])}`);
      assert.ok(cur.start > prev.start);
      assert.equal(chunks[i]!.text, linesOf(doc, cur));
    }
    const none = chunkDocument(doc, { size: 200, overlap: 0 });
    for (let i = 1; i < none.length; i++) {
      assert.equal(none[i]!.source.lines!.start, none[i - 1]!.source.lines!.end + 1);
    }
  });

  test("a line longer than a chunk is cut at sentence or word boundaries, every piece naming that line", () => {
    const long = "Longhaul keeps long work durable. ".repeat(60).trim();
    const doc = `Title line\n\n${long}\n\nLast words.`;
    const chunks = chunkDocument(doc, { size: 300, overlap: 40 });
    const pieces = chunks.filter((c) => c.source.lines!.start === 3);
    assert.ok(pieces.length >= 6);
    for (const p of pieces) {
      assert.deepEqual(p.source.lines, { start: 3, end: 3 });
      assert.ok(p.text.length <= 300);
      assert.ok(long.includes(p.text));
    }
    assert.deepEqual(chunks.at(-1)!.source.lines, { start: 5, end: 5 });
  });

  test("code: top-level definitions are cut apart, with the comments and decorators above them", () => {
    const ts = [
      'import { x } from "./x.ts";', // 1
      "", // 2
      "/** Adds. */", // 3
      "export function add(a: number, b: number): number {", // 4
      "  const sum = a + b;", // 5
      "", // 6
      "  return sum;", // 7
      "}", // 8
      "", // 9
      "// A class.", // 10
      "export class Counter {", // 11
      "  n = 0;", // 12
      "}", // 13
    ].join("\n");
    const chunks = chunkDocument(ts, { kind: "code", size: 120, overlap: 0 });
    assert.deepEqual(
      chunks.map((c) => c.source.lines),
      [
        { start: 1, end: 1 },
        { start: 3, end: 8 },
        { start: 10, end: 13 },
      ],
    );
    const py = [
      "import os",
      "",
      "@cache",
      "def load(path):",
      "    return open(path).read()",
      "",
      "",
      "class Store:",
      "    pass",
    ].join("\n");
    const pyChunks = chunkDocument(py, { kind: "code", size: 60, overlap: 0 });
    assert.deepEqual(
      pyChunks.map((c) => c.source.lines),
      [
        { start: 1, end: 1 },
        { start: 3, end: 5 },
        { start: 8, end: 9 },
      ],
    );
    // With room, small definitions share a chunk, still whole.
    assert.deepEqual(
      chunkDocument(ts, { kind: "code", size: 2000 }).map((c) => c.source.lines),
      [{ start: 1, end: 13 }],
    );
  });

  test("empty documents give no chunks; bad sizes are refused", () => {
    assert.deepEqual(chunkDocument("  \n\n \n"), []);
    assert.throws(() => chunkDocument("x", { size: 8 }), RangeError);
    assert.throws(() => chunkDocument("x", { size: 100, overlap: 100 }), RangeError);
  });
});

describe("hashed-ngram embedder", () => {
  test("deterministic, L2-normalised, and closer for texts that share words", async () => {
    const e = hashedNgramEmbedder(256);
    assert.equal(e.name, "hashed-ngram");
    const [a, a2, b, c] = await e.embed([
      "The invoice was paid in March",
      "The invoice was paid in March",
      "The invoices were paid in march",
      "Quantum chromodynamics of gluons",
    ]);
    assert.deepEqual(a, a2);
    const norm = Math.sqrt(a!.reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-5);
    const cos = (x: Float32Array, y: Float32Array) => x.reduce((s, v, i) => s + v * y[i]!, 0);
    assert.ok(cos(a!, b!) > cos(a!, c!) + 0.3, `${cos(a!, b!)} vs ${cos(a!, c!)}`);
    // Chinese, without spaces, shares character trigrams.
    const [zh1, zh2, zh3] = await e.embed([
      "长时间运行的任务在网络钩子上恢复",
      "任务在网络钩子上恢复",
      "今天天气很好",
    ]);
    assert.ok(cos(zh1!, zh2!) > cos(zh1!, zh3!));
  });

  test("a wrong dimension or count from an embedder is EMBEDDING_DIMENSION_MISMATCH", async () => {
    const short = {
      name: "short",
      dimensions: 8,
      embed: async (t: readonly string[]) => t.map(() => new Float32Array(7)),
    };
    await assert.rejects(embedChecked(short, ["a"]), { code: "EMBEDDING_DIMENSION_MISMATCH" });
    const few = { name: "few", dimensions: 8, embed: async () => [new Float32Array(8)] };
    await assert.rejects(embedChecked(few, ["a", "b"]), { code: "EMBEDDING_DIMENSION_MISMATCH" });
    const nan = { name: "nan", dimensions: 2, embed: async () => [new Float32Array([Number.NaN, 0])] };
    await assert.rejects(embedChecked(nan, ["a"]), { code: "EMBEDDING_DIMENSION_MISMATCH" });
  });
});

describe("query terms and rank fusion", () => {
  test("query syntax is reduced to plain words", () => {
    assert.deepEqual(queryTerms('"a" * NEAR( OR b- AND:c'), ["a", "near", "or", "b", "and", "c"]);
    assert.deepEqual(queryTerms('"*()'), []);
    assert.deepEqual(queryTerms("任务 恢复"), ["任务", "恢复"]);
    // Combining marks stay inside their word (Devanagari vowel signs).
    assert.deepEqual(queryTerms("हिन्दी पाठ"), ["हिन्दी", "पाठ"]);
  });

  test("reciprocal rank fusion with k = 60 favours what both lists rank high", () => {
    const fused = reciprocalRankFusion([
      ["a", "b", "c"],
      ["b", "c", "d"],
    ]);
    assert.equal(fused[0]!.key, "b");
    assert.ok(Math.abs(fused[0]!.score - (1 / 62 + 1 / 61)) < 1e-12);
    assert.deepEqual(
      fused.map((f) => f.key),
      ["b", "c", "a", "d"],
    );
  });
});
