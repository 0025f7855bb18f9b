import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { geminiProvider } from "../src/providers/gemini/gemini-provider.ts";
import { type GeminiStandin, startGeminiStandin } from "./fixtures/gemini-standin.ts";
import { jobRequests } from "./fixtures/provider-asserts.ts";
import { tempDir } from "./helpers.ts";

// Gemini batches request by request: step.batch's requests become inline requests keyed by
// custom_id, and a batch's responses file is downloaded through the Files API's download
// endpoint into the blob store and merged into items like OpenAI's result files.

const KEY = "AIza-test-gemini-batches";
const HOOK = "https://hooks.example.com/hooks/gemini";
const job = jobRequests("review", HOOK);
const content = (text: string) => ({ contents: [{ parts: [{ text }] }] });

describe("create", () => {
  let gemini: GeminiStandin;
  before(async () => {
    gemini = await startGeminiStandin(KEY);
  });
  after(() => gemini.close());

  test("step.batch's requests are inline requests keyed by custom_id, the model from the endpoint", async () => {
    const provider = geminiProvider({ apiKey: KEY, baseUrl: gemini.baseUrl, timeoutMs: 5000 });
    const req = job({
      kind: "batch",
      endpoint: "/models/gemini-2.5-flash:generateContent",
      requests: [
        { custom_id: "a", body: content("one") },
        { custom_id: "b", body: content("two") },
      ],
      metadata: { team: "docs" },
    });
    await provider.create(req);
    const sent = gemini.requests.at(-1)!;
    assert.equal(sent.path, "/v1beta/models/gemini-2.5-flash:batchGenerateContent");
    assert.deepEqual((sent.body as { batch: Record<string, unknown> }).batch.input_config, {
      requests: {
        requests: [
          { request: content("one"), metadata: { key: "a" } },
          { request: content("two"), metadata: { key: "b" } },
        ],
      },
    });
    assert.equal((sent.body as { batch: Record<string, unknown> }).batch.endpoint, undefined);
  });
});

describe("fetchResult of a batch with a responses file", () => {
  const files = new Map<string, string>();
  const operations = new Map<string, unknown>();
  const seen: string[] = [];
  let baseUrl = "";
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    if (req.headers["x-goog-api-key"] !== KEY) return void res.writeHead(401).end();
    const op = /^\/v1beta\/(batches\/[^/]+)$/.exec(req.url ?? "");
    if (op && operations.has(op[1]!)) {
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(JSON.stringify(operations.get(op[1]!)));
    }
    const dl = /^\/download\/v1beta\/(files\/[^/:]+):download\?alt=media$/.exec(req.url ?? "");
    if (dl && files.has(dl[1]!)) {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      return void res.end(files.get(dl[1]!));
    }
    res
      .writeHead(404, { "content-type": "application/json" })
      .end('{"error":{"code":404,"status":"NOT_FOUND"}}');
  });
  const tmp = tempDir();
  const blobs = new FsBlobStore({ root: join(tmp.dir, "blobs") });
  const done = (name: string, file: string, keys?: string[]) =>
    operations.set(name, {
      name,
      done: true,
      metadata: {
        state: "BATCH_STATE_SUCCEEDED",
        ...(keys
          ? {
              inputConfig: {
                requests: { requests: keys.map((key) => ({ request: {}, metadata: { key } })) },
              },
            }
          : {}),
      },
      response: {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
        responsesFile: file,
      },
    });
  const answer = (key: string, text: string, tokens: number) =>
    JSON.stringify({
      key,
      response: {
        candidates: [{ content: { parts: [{ text }], role: "model" } }],
        usageMetadata: { promptTokenCount: tokens, candidatesTokenCount: 1, totalTokenCount: tokens + 1 },
      },
    });
  before(async () => {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1beta`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    tmp.cleanup();
  });

  test("the file is downloaded into the blob store and merged in request order, with usage per item", async () => {
    const provider = geminiProvider({ apiKey: KEY, baseUrl, timeoutMs: 5000 });
    files.set(
      "files/r1",
      `${answer("b", "two", 4)}\n${JSON.stringify({ key: "c", error: { code: 13, message: "internal", status: "INTERNAL" } })}\n${answer("a", "one", 2)}\n`,
    );
    done("batches/b1", "files/r1", ["a", "b", "c", "d"]);
    const result = await provider.fetchResult!("batches/b1", { files: blobs });
    const { items } = result.output as {
      items: { custom_id: string; status: string; usage?: unknown; error?: unknown }[];
    };
    assert.deepEqual(
      items.map((i) => [i.custom_id, i.status]),
      [
        ["a", "succeeded"],
        ["b", "succeeded"],
        ["c", "failed"],
        ["d", "expired"],
      ],
    );
    assert.deepEqual(items[0]!.usage, { input_tokens: 2, output_tokens: 1, total_tokens: 3 });
    assert.deepEqual(items[2]!.error, { code: "INTERNAL", message: "internal" });
    assert.deepEqual(result.usage, { prompt_tokens: 6, completion_tokens: 2, total_tokens: 8 });
    assert.ok(seen.includes("GET /download/v1beta/files/r1:download?alt=media"));
    const kept = [];
    for await (const k of blobs.list("providers/gemini/")) kept.push(k);
    assert.equal(kept.length, 1);
    assert.match(kept[0]!, /^providers\/gemini\/batches\/batches_b1-[0-9a-f]+\/responses\.jsonl$/);
  });

  test("without the requests' keys the items are the file's lines, in order", async () => {
    const provider = geminiProvider({ apiKey: KEY, baseUrl, timeoutMs: 5000 });
    files.set("files/r2", `${answer("x", "one", 1)}\n${answer("y", "two", 1)}\n`);
    done("batches/b2", "files/r2");
    const result = await provider.fetchResult!("batches/b2");
    assert.deepEqual(
      (result.output as { items: { custom_id: string }[] }).items.map((i) => i.custom_id),
      ["x", "y"],
    );
  });

  test("a line that is not JSON is PROVIDER_RESULT_INVALID naming the file and line", async () => {
    const provider = geminiProvider({ apiKey: KEY, baseUrl, timeoutMs: 5000 });
    files.set("files/r3", `${answer("a", "one", 1)}\n{oops\n`);
    done("batches/b3", "files/r3", ["a", "b"]);
    await assert.rejects(provider.fetchResult!("batches/b3", { files: blobs }), (e: unknown) => {
      assert.ok(e instanceof LonghaulError && e.code === "PROVIDER_RESULT_INVALID", String(e));
      assert.match(e.message, /responses file files\/r3, line 2: not JSON/);
      return true;
    });
  });
});
