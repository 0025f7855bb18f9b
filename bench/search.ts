// Exact vector search: POST /v1/search's vector mode (usecases/search-chunks.ts) over a SQLite
// file holding N chunks of one tenant (BENCH_SEARCH_SIZES, default 10000,100000), each with a
// 384-dimension hashed-ngram vector, beside the ceiling: a bare brute-force scan over one
// Float32Array of N random unit vectors in memory, in a process of its own
// (bench/ceiling/brute-scan.mjs). Both keep the best k = 10. BENCH_QUERIES (default 30)
// queries each after two warm-up ones; p50 and p99 of their times (with 30 queries p99 is the
// slowest). Keyword and hybrid are timed too, for scale; they have no ceiling here. The text
// is synthetic (a seeded generator of pseudo-words); the scan's cost does not depend on it.
// Each store lives in a temp dir removed at the end. The table is appended to bench/RESULTS.md.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NewChunk, SearchMode } from "../src/core/chunk.ts";
import { hashedNgramEmbedder } from "../src/search/hashed-ngram-embedder.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { searchChunks } from "../src/usecases/search-chunks.ts";
import { commandLine, fmt, machineLine, recordResult, table } from "./load.ts";

const SIZES = (process.env.BENCH_SEARCH_SIZES ?? "10000,100000").split(",").map(Number);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 30);
const K = 10;
const PER_TASK = 1000;

const dir = mkdtempSync(join(tmpdir(), "longhaul-search-"));
process.once("exit", () => rmSync(dir, { recursive: true, force: true }));

let seed = 7;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const SYLLABLES = [
  "ka",
  "lo",
  "mi",
  "ren",
  "to",
  "sa",
  "vel",
  "di",
  "nor",
  "pa",
  "que",
  "zi",
  "ha",
  "mun",
  "el",
];
const VOCABULARY = Array.from({ length: 5000 }, () =>
  Array.from(
    { length: 2 + Math.floor(random() * 3) },
    () => SYLLABLES[Math.floor(random() * SYLLABLES.length)],
  ).join(""),
);
const sentence = (words: number) =>
  Array.from({ length: words }, () => VOCABULARY[Math.floor(random() * VOCABULARY.length)]).join(" ");

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function timed(fn: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < QUERIES + 2; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    if (i >= 2) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

const embedder = hashedNgramEmbedder();
const rows: Record<string, string | number>[] = [];
for (const n of SIZES) {
  const store = new SqliteStore({ path: join(dir, `search-${n}.db`) });
  await store.migrate();
  const tenant = await store.createTenant({ name: "bench", keyHash: `bench-${n}` });
  const texts: string[] = [];
  for (let t = 0; t < n / PER_TASK; t++) {
    const batch = Array.from({ length: PER_TASK }, () => sentence(40));
    texts.push(...batch.slice(0, 5));
    const vectors = await embedder.embed(batch);
    const chunks: NewChunk[] = batch.map((text, i) => ({
      id: `bench_${t}:${i}`,
      position: i,
      text,
      source: { lines: { start: i + 1, end: i + 1 } },
      fileId: null,
      metadata: {},
      embedding: vectors[i]!,
    }));
    await store.replaceTaskChunks(
      { tenantId: tenant.id, taskId: `bench_${t}`, taskType: "bench" },
      embedder,
      chunks,
    );
  }
  const queryOf = () => {
    const words = texts[Math.floor(random() * texts.length)]!.split(" ");
    const at = Math.floor(random() * (words.length - 8));
    return words.slice(at, at + 8).join(" ");
  };
  const run = (mode: SearchMode) =>
    timed(() =>
      searchChunks({ chunks: store, embedder }, tenant.id, { query: queryOf(), k: K, mode, filter: {} }),
    );
  const vector = await run("vector");
  const keyword = await run("keyword");
  const hybrid = await run("hybrid");
  await store.close();
  const ceiling = JSON.parse(
    execFileSync(
      process.execPath,
      [
        fileURLToPath(new URL("./ceiling/brute-scan.mjs", import.meta.url)),
        String(n),
        String(embedder.dimensions),
        String(QUERIES),
        String(K),
      ],
      { encoding: "utf8", maxBuffer: 1 << 20 },
    )
      .trim()
      .split("\n")
      .at(-1)!,
  ) as { p50_ms: number; p99_ms: number };
  rows.push(
    {
      chunks: n,
      what: "ceiling: bare Float32Array scan (own process)",
      "p50 ms": fmt(ceiling.p50_ms),
      "p99 ms": fmt(ceiling.p99_ms),
      "p50 vs ceiling": "1.0",
    },
    {
      chunks: n,
      what: "longhaul vector, exact (SQLite, pages of 1000)",
      "p50 ms": fmt(vector.p50),
      "p99 ms": fmt(vector.p99),
      "p50 vs ceiling": fmt(vector.p50 / ceiling.p50_ms),
    },
    {
      chunks: n,
      what: "longhaul keyword (FTS5)",
      "p50 ms": fmt(keyword.p50),
      "p99 ms": fmt(keyword.p99),
      "p50 vs ceiling": "–",
    },
    {
      chunks: n,
      what: "longhaul hybrid (both, fused)",
      "p50 ms": fmt(hybrid.p50),
      "p99 ms": fmt(hybrid.p99),
      "p50 vs ceiling": "–",
    },
  );
  console.error(`${n} chunks done`);
}

const text = [
  `${embedder.name} ${embedder.dimensions} dimensions, k = ${K}, ${QUERIES} queries per row after 2 warm-up ones (p99 of ${QUERIES} is the slowest); one tenant; SQLite file in a temp dir; in process (no HTTP)`,
  "",
  table(rows),
].join("\n");
recordResult(
  "exact vector search",
  machineLine(),
  commandLine("bench:search", ["BENCH_SEARCH_SIZES", "BENCH_QUERIES"]),
  text,
);
