import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createLonghaul, type Longhaul } from "../src/app.ts";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { LonghaulClient } from "../src/client/longhaul-client.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask } from "../src/core/task-type.ts";
import { demoTaskTypes } from "../src/demo/index.ts";
import { simProvider } from "../src/providers/sim/sim-provider.ts";
import { type Simulator, startSimulator } from "../src/providers/sim/simulator.ts";
import { hashedNgramEmbedder } from "../src/search/hashed-ngram-embedder.ts";
import { INSERT_BATCH } from "../src/store/ops/chunk-ops.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/store.ts";
import { taskIndex } from "../src/usecases/index-task-chunks.ts";
import { quietLog, tempDir, waitFor } from "./helpers.ts";
import { pgAvailableOrReport, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const MODES = ["vector", "keyword", "hybrid"] as const;

const DOCUMENT = [
  "# Harbour operations",
  "",
  "The lighthouse keeper logs every vessel that enters the northern harbour after dusk.",
  "Tugboats wait beside the breakwater until the pilot signals with two green flares.",
  "",
  "## Cargo",
  "",
  "Refrigerated containers of citrus fruit are unloaded first, before the grain barges.",
  "Customs officers inspect one container in twelve, chosen by a sealed lottery.",
  "",
  "## Weather",
  "",
  "When the barometer falls below nine hundred and eighty millibars the harbour closes.",
  "Storm shutters on the warehouse roofs are lowered by hand, from the east side first.",
].join("\n");

const CHINESE = "长时间运行的任务在签名的网络钩子上恢复。\n\n今天港口的天气很好，货船准时到达。";

/**
 * Test task types: `idx.put` indexes the chunks its input gives, with metadata; `idx.replace`
 * indexes a first set, then a second whose last chunk is refused, so the task fails with the
 * first set still whole.
 */
const idxPut = defineTask<{ chunks: { text: string; line: number; metadata?: Record<string, unknown> }[] }>(
  "idx.put",
  async (input, step, ctx) =>
    step.run("index", () =>
      ctx.index!.put(
        input.chunks.map((c) => ({
          text: c.text,
          source: { lines: { start: c.line, end: c.line } },
          ...(c.metadata ? { metadata: c.metadata } : {}),
        })),
      ),
    ),
);
const idxReplace = defineTask<{ first: string[]; second: string[] }>(
  "idx.replace",
  async (input, step, ctx) => {
    const put = (texts: string[]) =>
      ctx.index!.put(texts.map((text, i) => ({ text, source: { lines: { start: i + 1, end: i + 1 } } })));
    await step.run("first", () => put(input.first));
    return step.run("second", () => put(input.second));
  },
);

function searchSuite(name: string, open: (dir: string) => Store) {
  describe(`POST /v1/search over HTTP (${name})`, () => {
    const tmp = tempDir();
    let store: Store;
    let app: Longhaul;
    let sim: Simulator;
    let url: string;
    const key = newApiKey();
    const otherKey = newApiKey();
    let tenantId: string;
    let otherTenantId: string;

    const call = async (
      path: string,
      init: { method?: string; body?: unknown; key?: string; raw?: string } = {},
    ) => {
      const res = await fetch(url + path, {
        method: init.method ?? (init.body === undefined && init.raw === undefined ? "GET" : "POST"),
        headers: {
          authorization: `Bearer ${init.key ?? key}`,
          ...(init.body === undefined && init.raw === undefined
            ? {}
            : { "content-type": "application/json" }),
        },
        ...(init.raw !== undefined
          ? { body: init.raw }
          : init.body === undefined
            ? {}
            : { body: JSON.stringify(init.body) }),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    };
    const search = (body: unknown, k = key) => call("/v1/search", { body, key: k });
    const runToEnd = async (body: unknown) => {
      const submitted = await call("/v1/tasks", { body });
      assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
      const id = submitted.body.task_id as string;
      return waitFor(
        async () => {
          const r = await call(`/v1/tasks/${id}`);
          return ["succeeded", "failed", "canceled", "timed_out"].includes(r.body.status) ? r.body : null;
        },
        60_000,
        `task ${id} to end`,
      );
    };

    before(async () => {
      store = open(tmp.dir);
      await store.migrate();
      tenantId = (await store.createTenant({ name: "search", keyHash: hashApiKey(key) })).id;
      otherTenantId = (await store.createTenant({ name: "other", keyHash: hashApiKey(otherKey) })).id;
      sim = await startSimulator({
        secret: SECRET,
        seed: 1,
        retryScheduleMs: [50, 100, 200],
        onError: () => {},
      });
      app = await createLonghaul({
        store,
        logger: quietLog(),
        taskTypes: [...demoTaskTypes(), idxPut, idxReplace],
        providers: [simProvider({ baseUrl: sim.url })],
        sources: { sim: { provider: "sim", secrets: [SECRET] } },
        blobs: new FsBlobStore({ root: join(tmp.dir, "blobs") }),
        worker: { leaseMs: 5000, idleMs: 50 },
      });
      url = await app.listen({ port: 0 });
    });
    after(async () => {
      await app.close();
      await sim.close();
      tmp.cleanup();
    });

    let ragTask: string;

    test("after rag_summary succeeds, a sentence of its document is in the top 3 in every mode; another tenant finds nothing", async () => {
      const task = await runToEnd({ type: "rag_summary", input: { document: DOCUMENT } });
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      ragTask = task.task_id;
      assert.ok(task.output.chunks >= 3, JSON.stringify(task.output));
      const sentence = "Customs officers inspect one container in twelve, chosen by a sealed lottery.";
      for (const mode of MODES) {
        const r = await search({ query: sentence, mode, k: 5 });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.mode, mode);
        const top3 = r.body.data.slice(0, 3);
        const hit = top3.find((h: { text: string }) => h.text.includes(sentence));
        assert.ok(hit, `${mode}: ${JSON.stringify(r.body.data.map((h: { text: string }) => h.text))}`);
        assert.equal(hit.task_id, ragTask);
        assert.equal(hit.task_type, "rag_summary");
        assert.equal(hit.file_id, null);
        assert.match(hit.chunk_id, new RegExp(`^${ragTask}:\\d+$`));
        assert.deepEqual(hit.source, { lines: { start: 6, end: 9 } });
        assert.deepEqual(hit.metadata, { source: "inline" });
        assert.equal(typeof hit.score, "number");
        // Best first.
        const scores = r.body.data.map((h: { score: number }) => h.score);
        assert.deepEqual(
          scores,
          [...scores].sort((a, b) => b - a),
        );

        const other = await search({ query: sentence, mode }, otherKey);
        assert.equal(other.status, 200, JSON.stringify(other.body));
        assert.deepEqual(other.body.data, [], `${mode}: another tenant's search`);
      }
      // Hybrid is the default mode and 10 the default k.
      const plain = await search({ query: "lighthouse keeper vessels" });
      assert.equal(plain.body.mode, "hybrid");
      assert.ok(plain.body.data.length >= 1 && plain.body.data.length <= 10);
      assert.match(plain.body.data[0].text, /lighthouse keeper/);
      assert.equal(await store.countChunks(otherTenantId), 0);
    });

    test("two tenants with the same text each find only their own chunks", async () => {
      const submitted = await call("/v1/tasks", {
        key: otherKey,
        body: { type: "rag_summary", input: { document: DOCUMENT } },
      });
      assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
      const theirs = submitted.body.task_id as string;
      await waitFor(
        async () => {
          const r = await call(`/v1/tasks/${theirs}`, { key: otherKey });
          return r.body.status === "succeeded" ? r.body : null;
        },
        60_000,
        "the other tenant's rag_summary",
      );
      const sentence = "Tugboats wait beside the breakwater until the pilot signals with two green flares.";
      for (const mode of MODES) {
        const mine = await search({ query: sentence, mode, k: 100 });
        const other = await search({ query: sentence, mode, k: 100 }, otherKey);
        assert.ok(mine.body.data.length >= 1 && other.body.data.length >= 1, mode);
        assert.ok(
          mine.body.data.every((h: { task_id: string }) => h.task_id !== theirs),
          mode,
        );
        assert.ok(
          other.body.data.every((h: { task_id: string }) => h.task_id === theirs),
          mode,
        );
        assert.ok(other.body.data[0].text.includes(sentence), mode);
      }
      // The other tenant's task id as a filter finds nothing for this tenant.
      const crossed = await search({ query: sentence, filter: { task_id: theirs } });
      assert.deepEqual(crossed.body.data, []);
    });

    test("the typed client searches too, and a refused query is its error with the code", async () => {
      const client = new LonghaulClient({ baseUrl: url, apiKey: key });
      const answer = await client.search("lighthouse keeper logs every vessel", { mode: "keyword", k: 3 });
      assert.equal(answer.mode, "keyword");
      assert.equal(answer.data[0]?.task_id, ragTask);
      await assert.rejects(client.search("x", { k: 0 }), {
        name: "LonghaulClientError",
        code: "VALIDATION_FAILED",
      });
    });

    test("indexing again replaces a task's chunks: a step run twice leaves one copy", async () => {
      const embedder = hashedNgramEmbedder();
      const index = taskIndex(
        { chunks: store, embedder },
        { taskId: "task_replay", tenantId, type: "t", userId: null, traceId: null },
      );
      const drafts = ["one", "two", "three"].map((text, i) => ({
        text,
        source: { lines: { start: i + 1, end: i + 1 } },
      }));
      await index.put(drafts);
      await index.put(drafts);
      assert.equal(await store.countChunks(tenantId, "task_replay"), 3);
      assert.equal(
        await store.countChunks(tenantId, ragTask),
        (await call(`/v1/tasks/${ragTask}`)).body.output.chunks,
      );
    });

    test("filters: task id, task type and metadata narrow the results", async () => {
      const task = await runToEnd({
        type: "idx.put",
        input: {
          chunks: [
            {
              text: "The lighthouse keeper retired in spring.",
              line: 1,
              metadata: { lang: "en", kind: "note" },
            },
            {
              text: "The lighthouse lamp was replaced by an LED.",
              line: 2,
              metadata: { lang: "en", kind: "log" },
            },
          ],
        },
      });
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      const q = "lighthouse keeper";
      for (const mode of MODES) {
        const byTask = await search({ query: q, mode, filter: { task_id: task.task_id } });
        assert.equal(byTask.status, 200, JSON.stringify(byTask.body));
        assert.ok(byTask.body.data.length >= 1);
        assert.ok(byTask.body.data.every((h: { task_id: string }) => h.task_id === task.task_id));

        const byType = await search({ query: q, mode, filter: { task_type: "rag_summary" } });
        assert.ok(byType.body.data.length >= 1);
        assert.ok(byType.body.data.every((h: { task_type: string }) => h.task_type === "rag_summary"));

        const byMeta = await search({ query: q, mode, filter: { metadata: { kind: "log" } } });
        assert.deepEqual(
          byMeta.body.data.map((h: { text: string }) => h.text),
          ["The lighthouse lamp was replaced by an LED."],
          mode,
        );
        const none = await search({ query: q, mode, filter: { metadata: { kind: "log", lang: "fr" } } });
        assert.deepEqual(none.body.data, []);
      }
    });

    test("hostile query text is never a syntax error: quotes, stars, NEAR(, OR, unicode", async () => {
      const hostile = [
        '"',
        '"""',
        "*",
        "lighthouse*",
        "NEAR(",
        "NEAR(lighthouse keeper, 2)",
        "OR",
        "lighthouse OR",
        "AND NOT -",
        "keeper:lighthouse",
        "^col",
        "{a b}",
        "'; DROP TABLE chunks; --",
        "\\",
        "😀 ∑ ﬁ Ünïcödé",
        "हिन्दी पाठ",
        "\u0000",
        "a".repeat(2000),
        "!@#$%^&*()",
      ];
      for (const query of hostile) {
        for (const mode of MODES) {
          const r = await search({ query, mode });
          assert.equal(
            r.status,
            200,
            `${mode} ${JSON.stringify(query.slice(0, 40))}: ${JSON.stringify(r.body)}`,
          );
          assert.ok(Array.isArray(r.body.data));
        }
      }
      // The words inside syntax still count.
      const near = await search({ query: "NEAR(lighthouse keeper, 2)", mode: "keyword" });
      assert.ok(near.body.data.some((h: { text: string }) => /lighthouse keeper/.test(h.text)));
      assert.equal(
        await store.countChunks(tenantId, ragTask),
        (await call(`/v1/tasks/${ragTask}`)).body.output.chunks,
      );
    });

    test("Chinese text is indexed and found", async () => {
      const task = await runToEnd({ type: "rag_summary", input: { document: CHINESE } });
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      const vector = await search({ query: "任务在签名的网络钩子上恢复", mode: "vector", k: 3 });
      assert.equal(vector.status, 200);
      assert.equal(vector.body.data[0].task_id, task.task_id);
      const hybrid = await search({ query: "任务在签名的网络钩子上恢复", mode: "hybrid", k: 3 });
      assert.equal(hybrid.body.data[0].task_id, task.task_id);
      // Full text (FTS5 unicode61, PostgreSQL simple) takes a run of Chinese characters between punctuation as one word.
      const keyword = await search({ query: "今天港口的天气很好", mode: "keyword" });
      assert.equal(keyword.status, 200);
      assert.equal(keyword.body.data[0]?.task_id, task.task_id);
    });

    test("a rag_summary of a file keeps its file id; deleting the file removes its chunks", async () => {
      const upload = await fetch(`${url}/v1/files?filename=harbour.md`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "text/markdown" },
        body: DOCUMENT.replaceAll("harbour", "seaport"),
      });
      const file = await upload.json();
      assert.equal(upload.status, 201, JSON.stringify(file));
      const task = await runToEnd({ type: "rag_summary", input: { file_id: file.file_id } });
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      const query = "the seaport closes when the barometer falls";
      for (const mode of MODES) {
        const r = await search({ query, mode, filter: { file_id: file.file_id } });
        assert.ok(r.body.data.length >= 1, mode);
        assert.ok(r.body.data.every((h: { file_id: string }) => h.file_id === file.file_id));
        assert.deepEqual(r.body.data[0].metadata, { source: "file" });
      }
      assert.ok((await store.countChunks(tenantId, task.task_id)) >= 3);
      // Another tenant cannot delete it, nor its chunks.
      assert.equal(
        (await call(`/v1/files/${file.file_id}`, { method: "DELETE", key: otherKey })).status,
        404,
      );
      assert.ok((await store.countChunks(tenantId, task.task_id)) >= 3);

      assert.equal((await call(`/v1/files/${file.file_id}`, { method: "DELETE" })).status, 204);
      assert.equal(await store.countChunks(tenantId, task.task_id), 0);
      for (const mode of MODES) {
        const r = await search({ query, mode });
        assert.ok(
          r.body.data.every(
            (h: { file_id: string | null; task_id: string }) =>
              h.file_id === null && h.task_id !== task.task_id,
          ),
          mode,
        );
      }
      // The inline document's chunks are untouched.
      assert.ok((await store.countChunks(tenantId, ragTask)) >= 3);
    });

    test("all or nothing: a refused chunk fails the step and leaves the task's earlier chunks whole", async () => {
      const task = await runToEnd({
        type: "idx.replace",
        input: {
          first: ["alpha breakwater", "beta breakwater"],
          second: ["gamma breakwater", "delta", "   "],
        },
      });
      assert.equal(task.status, "failed");
      assert.equal(task.error.code, "CHUNKS_INVALID", JSON.stringify(task.error));
      const r = await search({
        query: "breakwater gamma delta alpha beta",
        mode: "keyword",
        filter: { task_id: task.task_id },
      });
      assert.deepEqual(r.body.data.map((h: { text: string }) => h.text).sort(), [
        "alpha breakwater",
        "beta breakwater",
      ]);
    });

    test("all or nothing in the store: a write that fails midway leaves the previous set", async () => {
      const embedder = hashedNgramEmbedder();
      const task = { tenantId, taskId: "task_midway", taskType: "t" };
      const row = (id: string, text: string) => ({
        id,
        position: 0,
        text,
        source: {},
        fileId: null,
        metadata: {},
        embedding: new Float32Array(embedder.dimensions),
      });
      await store.replaceTaskChunks(task, embedder, [row("m:0", "kept one"), row("m:1", "kept two")]);
      // Rows go in several statements (INSERT_BATCH each); the last row repeats an id, so the
      // unique index refuses the last statement after the earlier ones inserted theirs.
      const many = Array.from({ length: INSERT_BATCH * 2 + 50 }, (_, i) => row(`n:${i}`, `new ${i}`));
      await assert.rejects(store.replaceTaskChunks(task, embedder, [...many, row("n:0", "dup")]));
      assert.equal(await store.countChunks(tenantId, "task_midway"), 2);
      const r = await search({ query: "new one kept", mode: "keyword", filter: { task_id: "task_midway" } });
      assert.deepEqual(r.body.data.map((h: { text: string }) => h.text).sort(), ["kept one", "kept two"]);
      // Without the repeated id, all of them replace the old two.
      assert.equal(await store.replaceTaskChunks(task, embedder, many), many.length);
      assert.equal(await store.countChunks(tenantId, "task_midway"), many.length);
    });

    test("an embedder that answers the wrong dimension is EMBEDDING_DIMENSION_MISMATCH, and nothing is indexed", async () => {
      const bad = {
        name: "bad",
        dimensions: 16,
        embed: async (texts: readonly string[]) => texts.map((_, i) => new Float32Array(i === 1 ? 15 : 16)),
      };
      const index = taskIndex(
        { chunks: store, embedder: bad },
        { taskId: "task_bad_dims", tenantId, type: "t", userId: null, traceId: null },
      );
      await assert.rejects(index.put(["a", "b", "c"].map((text) => ({ text, source: {} }))), {
        code: "EMBEDDING_DIMENSION_MISMATCH",
      });
      assert.equal(await store.countChunks(tenantId, "task_bad_dims"), 0);
    });

    test("chunks that cannot be stored are CHUNKS_INVALID, and none of the set is written", async () => {
      const index = taskIndex(
        { chunks: store, embedder: hashedNgramEmbedder() },
        { taskId: "task_invalid", tenantId, type: "t", userId: null, traceId: null },
      );
      const good = { text: "fine", source: { lines: { start: 1, end: 1 } } };
      const bad: unknown[] = [
        { text: "", source: {} },
        { text: "x".repeat(32_001), source: {} },
        { text: "x", source: { lines: { start: 0, end: 1 } } },
        { text: "x", source: { lines: { start: 3, end: 2 } } },
        { text: "x", source: {}, metadata: [1] },
        { text: "x", source: {}, metadata: { big: "m".repeat(5000) } },
        { text: "x", source: {}, fileId: 7 },
      ];
      for (const b of bad) {
        await assert.rejects(
          index.put([good, b as typeof good]),
          { code: "CHUNKS_INVALID" },
          JSON.stringify(b).slice(0, 60),
        );
      }
      assert.equal(await store.countChunks(tenantId, "task_invalid"), 0);
    });

    test("bad input is 400 with a stable code, never a 5xx", async () => {
      const bad: unknown[] = [
        {},
        { query: "" },
        { query: 42 },
        { query: "x", k: 0 },
        { query: "x", k: 101 },
        { query: "x", k: 2.5 },
        { query: "x", mode: "semantic" },
        { query: "x", filter: { owner: "me" } },
        { query: "x", filter: { metadata: { "bad key": "v" } } },
        { query: "x", filter: { metadata: { lang: 3 } } },
        { query: "x", extra: true },
        { query: "x".repeat(2001) },
      ];
      for (const body of bad) {
        const r = await search(body);
        assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "VALIDATION_FAILED");
      }
      const broken = await call("/v1/search", { raw: "{not json" });
      assert.equal(broken.status, 400);
      assert.equal(broken.body.error.code, "INVALID_JSON");
      const anon = await fetch(`${url}/v1/search`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "x" }),
      });
      assert.equal(anon.status, 401);
    });

    test("a tenant with no chunks gets an empty list in every mode", async () => {
      const emptyKey = newApiKey();
      await store.createTenant({ name: "empty", keyHash: hashApiKey(emptyKey) });
      for (const mode of MODES) {
        const r = await search({ query: "lighthouse", mode }, emptyKey);
        assert.equal(r.status, 200);
        assert.deepEqual(r.body, { data: [], mode });
      }
    });
  });
}

searchSuite("sqlite", (dir) => new SqliteStore({ path: join(dir, "longhaul.db") }));

if (pgAvailableOrReport(await pgUnreachable(), "PostgreSQL search tests")) {
  const { fresh } = pgTestSchemas();
  searchSuite("postgres", () => new PostgresStore({ url: pgUrl(fresh()) }));
}
