import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { defineTask } from "../src/core/task-type.ts";
import {
  BATCH_LOOKUP_PAGE_SIZE,
  BATCH_LOOKUP_PAGES,
  geminiProvider,
} from "../src/providers/gemini/gemini-provider.ts";
import type { Provider } from "../src/providers/provider.ts";
import { type GeminiStandin, startGeminiStandin } from "./fixtures/gemini-standin.ts";
import { headerOf } from "./fixtures/json-standin.ts";
import { jobRequests, providerError, validationError } from "./fixtures/provider-asserts.ts";
import { waitFor } from "./helpers.ts";
import { startStack } from "./stack.ts";

const KEY = "AIza-test-gemini-standin";
const HOOK = "https://hooks.example.com/hooks/gemini";
let gemini: GeminiStandin;
let provider: Provider;

before(async () => {
  gemini = await startGeminiStandin(KEY);
  provider = geminiProvider({ apiKey: KEY, baseUrl: gemini.baseUrl, timeoutMs: 2000 });
});
after(() => gemini.close());

const job = jobRequests("gen", HOOK);

const last = () => gemini.requests.at(-1)!;
const webhookConfig = (taskId: string) => ({
  uris: [HOOK],
  user_metadata: { longhaul_task: taskId, longhaul_step: "gen" },
});

const request = (text: string) => ({ contents: [{ parts: [{ text }] }] });

describe("create", () => {
  test("a batch is POST models/{model}:batchGenerateContent with inline requests and its webhook config", async () => {
    const req = job({
      kind: "batch",
      model: "models/gemini-2.5-flash",
      requests: [request("a"), { request: request("b"), metadata: { key: "b" } }],
    });
    const created = await provider.create(req);
    assert.match(created.jobId, /^batches\//);
    const sent = last();
    assert.equal(sent.method, "POST");
    assert.equal(sent.path, "/v1beta/models/gemini-2.5-flash:batchGenerateContent");
    assert.equal(headerOf(sent, "x-goog-api-key"), KEY);
    assert.equal(headerOf(sent, "idempotency-key"), req.idempotencyKey);
    assert.deepEqual(sent.body, {
      batch: {
        display_name: `longhaul ${req.idempotencyKey}`,
        input_config: {
          requests: {
            requests: [{ request: request("a") }, { request: request("b"), metadata: { key: "b" } }],
          },
        },
        webhook_config: webhookConfig(req.taskId),
      },
    });
  });

  test("a batch from an uploaded file names it in input_config", async () => {
    const req = job({
      kind: "batch",
      model: "gemini-2.5-flash",
      file_name: "files/abc",
      display_name: "nightly",
    });
    await provider.create(req);
    assert.deepEqual((last().body as { batch: unknown }).batch, {
      display_name: "nightly",
      input_config: { file_name: "files/abc" },
      webhook_config: webhookConfig(req.taskId),
    });
  });

  test("the same idempotency key returns the same batch and creates nothing new", async () => {
    const req = job({ kind: "batch", model: "gemini-2.5-flash", requests: [request("once")] });
    const first = await provider.create(req);
    const count = gemini.resources.size;
    const again = await provider.create(req);
    assert.equal(again.jobId, first.jobId);
    assert.equal(gemini.resources.size, count);
  });

  test("any other input is a background interaction, named interactions/{id}", async () => {
    const req = job({ model: "gemini-3-pro-preview", input: "Research otters." });
    const created = await provider.create(req);
    assert.match(created.jobId, /^interactions\/v1_int\d+$/);
    const sent = last();
    assert.equal(sent.path, "/v1beta/interactions");
    assert.deepEqual(sent.body, {
      model: "gemini-3-pro-preview",
      input: "Research otters.",
      background: true,
      webhook_config: webhookConfig(req.taskId),
    });
    assert.equal((await provider.create(req)).jobId, created.jobId);
  });

  test("kind long_running calls models/{model}:predictLongRunning and keeps the operation name", async () => {
    const req = job({
      kind: "long_running",
      model: "veo-3.0-generate-001",
      instances: [{ prompt: "otters" }],
    });
    const created = await provider.create(req);
    assert.match(created.jobId, /^models\/veo-3\.0-generate-001\/operations\/op\d+$/);
    assert.equal(last().path, "/v1beta/models/veo-3.0-generate-001:predictLongRunning");
    assert.deepEqual(last().body, {
      instances: [{ prompt: "otters" }],
      webhook_config: webhookConfig(req.taskId),
    });
  });

  test("a batch without a model or without requests is refused before any request", async () => {
    const count = gemini.requests.length;
    for (const input of [
      { kind: "batch", requests: [request("x")] },
      { kind: "batch", model: "gemini-2.5-flash" },
      "text",
    ]) {
      await providerError(
        () => provider.create(job(input)),
        (e) => assert.equal(e.retriable, false),
      );
    }
    assert.equal(gemini.requests.length, count);
  });
});

describe("errors", () => {
  test("a 500 is retriable and the retry with the same key creates the batch once", async () => {
    const req = job({ kind: "batch", model: "gemini-2.5-flash", requests: [request("flaky")] });
    gemini.failNext(500);
    await providerError(
      () => provider.create(req),
      (e) => {
        assert.equal(e.retriable, true);
        assert.match(e.message, /HTTP 500 INTERNAL/);
      },
    );
    const created = await provider.create(req);
    assert.equal((await provider.create(req)).jobId, created.jobId);
  });

  test("a 503 and a 429 are retriable; a 400 is not", async () => {
    for (const [status, retriable] of [
      [503, true],
      [429, true],
      [400, false],
    ] as const) {
      gemini.failNext(status);
      await providerError(
        () => provider.create(job({ model: "gemini-2.5-flash", input: "x" })),
        (e) => {
          assert.equal(e.status, status);
          assert.equal(e.retriable, retriable);
        },
      );
    }
  });

  test("a wrong API key is a 401, not retriable", async () => {
    const wrong = geminiProvider({ apiKey: "nope", baseUrl: gemini.baseUrl });
    await providerError(
      () => wrong.status!("batches/b1"),
      (e) => {
        assert.equal(e.status, 401);
        assert.equal(e.retriable, false);
        assert.match(e.message, /UNAUTHENTICATED/);
      },
    );
  });

  test("a job id that is not a resource name is refused before any request", async () => {
    const count = gemini.requests.length;
    for (const id of ["batches/../v1/x", "/batches/x", "batches//x"]) {
      await providerError(
        () => provider.status!(id),
        (e) => assert.equal(e.retriable, false),
      );
    }
    assert.equal(gemini.requests.length, count);
  });
});

describe("lookup before a re-create (a stand-in that ignores Idempotency-Key, as Gemini does)", () => {
  let real: GeminiStandin;
  let adapter: Provider;
  before(async () => {
    real = await startGeminiStandin(KEY, { honourIdempotencyKey: false });
    adapter = geminiProvider({ apiKey: KEY, baseUrl: real.baseUrl, timeoutMs: 2000 });
  });
  after(() => real.close());

  const batchJob = (text: string) =>
    job({ kind: "batch", model: "gemini-2.5-flash", requests: [request(text)] });
  const named = (displayName: string) =>
    [...real.resources.entries()].filter(
      ([name, r]) =>
        name.startsWith("batches/") && (r.metadata as { displayName?: string }).displayName === displayName,
    );
  const sent = (from: number) => real.requests.slice(from).map((r) => `${r.method} ${r.path.split("?")[0]}`);
  /** Puts `n` unrelated batches at the stand-in, newer than anything made so far. */
  const others = (n: number, tag: string) => {
    for (let i = 0; i < n; i++) {
      const name = `batches/other-${tag}-${i}`;
      real.resources.set(name, { name, metadata: { displayName: `nightly ${i}` }, done: false });
    }
  };

  test("a create whose answer is lost (500 after creating) is found on the retry: one batch, the first one's name", async () => {
    const req = batchJob("lost");
    real.loseNextCreate();
    await providerError(
      () => adapter.create(req),
      (e) => assert.equal(e.retriable, true),
    );
    const made = named(`longhaul ${req.idempotencyKey}`);
    assert.equal(made.length, 1, "the lost create made the batch");
    const from = real.requests.length;
    const again = await adapter.create(req);
    assert.equal(again.jobId, made[0]![0]);
    assert.equal(named(`longhaul ${req.idempotencyKey}`).length, 1);
    assert.deepEqual(sent(from), ["GET /v1beta/batches"]);
  });

  test("a create whose connection drops after Gemini made the batch is found on the retry", async () => {
    let drop = true;
    const dropping: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (init?.method === "POST" && drop) {
        drop = false;
        await res.text();
        throw new TypeError("fetch failed: socket hang up");
      }
      return res;
    };
    const flaky = geminiProvider({
      apiKey: KEY,
      baseUrl: real.baseUrl,
      timeoutMs: 2000,
      fetchImpl: dropping,
    });
    const req = batchJob("dropped");
    await providerError(
      () => flaky.create(req),
      (e) => assert.equal(e.retriable, true),
    );
    const again = await flaky.create(req);
    const made = named(`longhaul ${req.idempotencyKey}`);
    assert.equal(made.length, 1);
    assert.equal(again.jobId, made[0]![0]);
  });

  test("a lookup that finds nothing creates normally, asking pages of 100 without a filter", async () => {
    others(3, "none");
    const req = batchJob("fresh");
    const from = real.requests.length;
    const created = await adapter.create(req);
    assert.deepEqual(sent(from), [
      "GET /v1beta/batches",
      "POST /v1beta/models/gemini-2.5-flash:batchGenerateContent",
    ]);
    assert.equal(real.requests[from]!.path, `/v1beta/batches?pageSize=${BATCH_LOOKUP_PAGE_SIZE}`);
    assert.deepEqual(
      named(`longhaul ${req.idempotencyKey}`).map(([name]) => name),
      [created.jobId],
    );
  });

  test("a lookup that fails is retriable and creates nothing", async () => {
    const req = batchJob("lookup fails");
    const count = real.resources.size;
    const from = real.requests.length;
    real.failNext(503);
    await providerError(
      () => adapter.create(req),
      (e) => {
        assert.equal(e.retriable, true);
        assert.match(e.message, /could not look up an earlier batch named "longhaul t_\d+:gen".*HTTP 503/);
      },
    );
    assert.deepEqual(sent(from), ["GET /v1beta/batches"]);
    assert.equal(real.resources.size, count);
  });

  test("a lookup answer that is not a list of operations is retriable and creates nothing", async () => {
    const posts: string[] = [];
    const garbled: typeof fetch = async (input, init) => {
      if (init?.method === "GET") return Response.json({ operations: "not a list" });
      posts.push(String(input));
      return fetch(input, init);
    };
    const confused = geminiProvider({ apiKey: KEY, baseUrl: real.baseUrl, fetchImpl: garbled });
    await providerError(
      () => confused.create(batchJob("garbled")),
      (e) => {
        assert.equal(e.retriable, true);
        assert.match(e.message, /not a list of operations/);
      },
    );
    assert.deepEqual(posts, []);
  });

  test("the lookup follows page tokens, so a batch on a later page is found", async () => {
    const req = batchJob("page three");
    real.loseNextCreate();
    await providerError(
      () => adapter.create(req),
      () => {},
    );
    others(2 * BATCH_LOOKUP_PAGE_SIZE + 10, "later");
    const from = real.requests.length;
    const again = await adapter.create(req);
    assert.equal(again.jobId, named(`longhaul ${req.idempotencyKey}`)[0]![0]);
    assert.deepEqual(sent(from), Array(3).fill("GET /v1beta/batches"));
    assert.equal(
      real.requests.at(-1)!.path,
      `/v1beta/batches?pageSize=${BATCH_LOOKUP_PAGE_SIZE}&pageToken=o200`,
    );
  });

  test(`the lookup reads at most ${BATCH_LOOKUP_PAGES} pages, so a batch older than that is not found`, async () => {
    const req = batchJob("too old");
    real.loseNextCreate();
    await providerError(
      () => adapter.create(req),
      () => {},
    );
    others(BATCH_LOOKUP_PAGES * BATCH_LOOKUP_PAGE_SIZE, "newer");
    const from = real.requests.length;
    await adapter.create(req);
    assert.deepEqual(sent(from), [
      ...Array(BATCH_LOOKUP_PAGES).fill("GET /v1beta/batches"),
      "POST /v1beta/models/gemini-2.5-flash:batchGenerateContent",
    ]);
    assert.equal(named(`longhaul ${req.idempotencyKey}`).length, 2);
  });

  test("a batch named by its input, an interaction and a long-running operation are created without a lookup", async () => {
    const from = real.requests.length;
    await adapter.create(
      job({ kind: "batch", model: "gemini-2.5-flash", requests: [request("n")], display_name: "nightly" }),
    );
    await adapter.create(job({ model: "gemini-3-pro-preview", input: "no lookup" }));
    await adapter.create(job({ kind: "long_running", model: "veo-3.0-generate-001", instances: [] }));
    assert.deepEqual(sent(from), [
      "POST /v1beta/models/gemini-2.5-flash:batchGenerateContent",
      "POST /v1beta/interactions",
      "POST /v1beta/models/veo-3.0-generate-001:predictLongRunning",
    ]);
  });
});

describe("through the engine", () => {
  test("a dispatch retried after a lost batch create records the one batch Gemini made and ends with its result", async () => {
    const real = await startGeminiStandin(KEY, { honourIdempotencyKey: false });
    const summarize = defineTask("test.gemini-batch", async (input: { text: string }, step) =>
      step.job("gen", {
        provider: "gemini",
        input: { kind: "batch", model: "gemini-2.5-flash", requests: [request(input.text)] },
      }),
    );
    const stack = await startStack({
      providers: [geminiProvider({ apiKey: KEY, baseUrl: real.baseUrl, timeoutMs: 2000 })],
      taskTypes: [summarize],
      pollAfterMs: 200,
    });
    try {
      real.loseNextCreate();
      const submitted = await stack.api("/v1/tasks", {
        body: { type: "test.gemini-batch", input: { text: "once" } },
      });
      assert.equal(submitted.status, 202);
      const taskId: string = submitted.body.task_id;
      const row = await waitFor(
        () =>
          stack.store.db
            .prepare("SELECT external_id FROM jobs WHERE task_id = ? AND external_id IS NOT NULL")
            .get(taskId) as { external_id: string } | undefined,
        10_000,
        "the job to be recorded as created",
      );
      const batches = [...real.resources.keys()].filter((n) => n.startsWith("batches/"));
      assert.deepEqual(batches, [row.external_id], "one batch, and it is the job");
      assert.equal(real.requests.filter((r) => r.method === "POST").length, 1);

      const response = { candidates: [{ content: { parts: [{ text: "done" }] } }] };
      real.update(row.external_id, { done: true, metadata: { state: "BATCH_STATE_SUCCEEDED" }, response });
      const task = await waitFor(
        async () => {
          const t = await stack.api(`/v1/tasks/${taskId}`);
          return t.body.status === "succeeded" ? t.body : null;
        },
        10_000,
        "the task to succeed from the polled batch",
      );
      assert.deepEqual(task.output, response);
    } finally {
      await stack.close();
      await real.close();
    }
  });
});

describe("parseEvent", () => {
  const envelopes = [
    ["batch.succeeded", "batches/b7", "job.succeeded"],
    ["batch.completed", "batches/b7", "job.succeeded"],
    ["batch.failed", "batches/b7", "job.failed"],
    ["batch.expired", "batches/b7", "job.failed"],
    ["batch.cancelled", "batches/b7", "job.canceled"],
    ["interaction.completed", "interactions/v1_x", "job.succeeded"],
    ["interaction.failed", "interactions/v1_x", "job.failed"],
    ["interaction.cancelled", "interactions/v1_x", "job.canceled"],
    ["interaction.requires_action", "interactions/v1_x", "job.failed"],
    ["video.generated", "models/veo/operations/op1", "job.succeeded"],
  ] as const;
  for (const [type, name, expected] of envelopes) {
    test(`${type} is ${expected} for ${name}`, () => {
      const event = provider.parseEvent({
        id: "msg_1",
        type,
        version: "v1",
        timestamp: "2026-05-04T12:00:00Z",
        data: { id: name },
      });
      assert.equal(event.type, expected);
      assert.equal(event.jobId, name);
      assert.equal(event.eventId, "msg_1");
      assert.equal(event.output, undefined);
      if (expected === "job.failed") assert.ok(event.error?.message);
    });
  }

  test("a bare id gets its family's prefix, so it matches the stored resource name", () => {
    assert.equal(provider.parseEvent({ type: "batch.succeeded", data: { id: "b7" } }).jobId, "batches/b7");
    assert.equal(
      provider.parseEvent({ type: "interaction.completed", data: { id: "v1_x" } }).jobId,
      "interactions/v1_x",
    );
    const noId = provider.parseEvent({ type: "batch.succeeded", data: { name: "batches/b7" } });
    assert.equal(noId.eventId, "batches/b7:batch.succeeded");
  });

  test("a failure carries the event's error code and message", () => {
    const event = provider.parseEvent({
      type: "batch.failed",
      data: { id: "batches/b7", error_code: "INVALID_ARGUMENT", error_message: "line 3 is not JSON" },
    });
    assert.deepEqual(event.error, { code: "INVALID_ARGUMENT", message: "line 3 is not JSON" });
    assert.equal(provider.parseEvent({ type: "batch.expired", data: { id: "b7" } }).error?.code, "expired");
    const asks = provider.parseEvent({ type: "interaction.requires_action", data: { id: "v1_x" } });
    assert.equal(asks.error?.code, "requires_action");
    assert.match(asks.error?.message ?? "", /function result/);
  });

  test("an operation body: not done is running; done with response succeeds with output and usage", () => {
    assert.deepEqual(
      provider.parseEvent({ name: "batches/b9", done: false, metadata: { state: "BATCH_STATE_RUNNING" } }),
      {
        eventId: "batches/b9:running",
        type: "job.running",
        jobId: "batches/b9",
      },
    );
    const response = {
      "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentResponse",
      candidates: [{ content: { parts: [{ text: "hi" }] } }],
      usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 6, totalTokenCount: 10 },
    };
    const done = provider.parseEvent({ name: "models/veo/operations/op2", done: true, response });
    assert.equal(done.type, "job.succeeded");
    assert.deepEqual(done.output, { candidates: response.candidates, usageMetadata: response.usageMetadata });
    assert.deepEqual(done.usage, { prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 });
  });

  test("an operation done with an error fails, or is canceled when the error is CANCELLED", () => {
    const failed = provider.parseEvent({
      name: "batches/b9",
      done: true,
      error: { code: 13, message: "internal" },
    });
    assert.equal(failed.type, "job.failed");
    assert.deepEqual(failed.error, { code: "13", message: "internal" });
    const canceled = provider.parseEvent({
      name: "batches/b9",
      done: true,
      error: { code: 1, message: "cancelled" },
    });
    assert.equal(canceled.type, "job.canceled");
  });

  test("a Pub/Sub push of an event is unwrapped and named by its message id", () => {
    const inner = { type: "batch.succeeded", data: { id: "batches/b7" } };
    const event = provider.parseEvent({
      message: {
        data: Buffer.from(JSON.stringify(inner)).toString("base64"),
        messageId: "1234567890",
        publishTime: "2026-05-04T12:00:00Z",
      },
      subscription: "projects/p/subscriptions/longhaul",
    });
    assert.deepEqual(event, { eventId: "1234567890", type: "job.succeeded", jobId: "batches/b7" });
  });

  test("an event type that ends no job is refused by name", () => {
    validationError(
      () => provider.parseEvent({ type: "webhook.ping", data: {} }),
      /"webhook\.ping".*does not end/,
    );
  });

  test("a body that is not a Gemini event is refused", () => {
    validationError(() => provider.parseEvent(null), /not a JSON object/);
    validationError(() => provider.parseEvent({ hello: "world" }), /neither a type/);
    validationError(() => provider.parseEvent({ type: "batch.succeeded" }), /no data object/);
    validationError(
      () => provider.parseEvent({ type: "batch.succeeded", data: { id: "" } }),
      /data\.name or data\.id/,
    );
    validationError(
      () => provider.parseEvent({ name: "batches/b1", metadata: { state: "BATCH_STATE_DREAMING" } }),
      /unknown batch state/,
    );
    validationError(
      () => provider.parseEvent({ message: { data: "!!!not base64 json" } }),
      /not base64 of a JSON/,
    );
  });
});

describe("fetchResult, status, cancel", () => {
  test("a succeeded batch gives its output and the usage summed over inlined responses", async () => {
    const { jobId } = await provider.create(
      job({ kind: "batch", model: "gemini-2.5-flash", requests: [request("a"), request("b")] }),
    );
    const inlined = [
      {
        response: {
          candidates: [],
          usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 5, totalTokenCount: 8 },
        },
      },
      {
        response: {
          candidates: [],
          usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 7, totalTokenCount: 9 },
        },
      },
    ];
    gemini.update(jobId, {
      done: true,
      metadata: { state: "BATCH_STATE_SUCCEEDED", name: jobId },
      response: {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
        inlinedResponses: { inlinedResponses: inlined },
      },
    });
    const result = await provider.fetchResult!(jobId);
    assert.deepEqual(result, {
      output: { inlinedResponses: { inlinedResponses: inlined } },
      usage: { prompt_tokens: 5, completion_tokens: 12, total_tokens: 17 },
    });
    assert.equal(last().method, "GET");
    assert.equal(last().path, `/v1beta/${jobId}`);
  });

  test("a batch whose output is in metadata.output is read from there", async () => {
    const { jobId } = await provider.create(
      job({ kind: "batch", model: "gemini-2.5-flash", file_name: "files/in" }),
    );
    // Inline responses without keys are not request by request: the output is kept whole.
    // (A responses file is downloaded and merged into items: providers-gemini-batch.test.ts.)
    const inlined = { inlinedResponses: { inlinedResponses: [{ response: { candidates: [] } }] } };
    gemini.update(jobId, {
      done: true,
      metadata: { state: "BATCH_STATE_SUCCEEDED", output: inlined },
    });
    assert.deepEqual(await provider.fetchResult!(jobId), { output: inlined, usage: undefined });
  });

  test("a completed interaction gives its text and usage", async () => {
    const { jobId } = await provider.create(job({ model: "gemini-3-pro-preview", input: "hi" }));
    gemini.update(jobId, {
      status: "completed",
      outputs: [
        { type: "thought", signature: "x" },
        { type: "text", text: "Otters hold hands " },
        { type: "text", text: "while sleeping." },
      ],
      usage: { total_input_tokens: 9, total_output_tokens: 21, total_thought_tokens: 5, total_tokens: 35 },
    });
    assert.deepEqual(await provider.fetchResult!(jobId), {
      output: "Otters hold hands while sleeping.",
      usage: { prompt_tokens: 9, completion_tokens: 21, total_tokens: 35 },
    });
    assert.equal(last().path, `/v1beta/${jobId}`);
  });

  test("fetching the result of a running job is retriable; of a failed one, not", async () => {
    const { jobId } = await provider.create(
      job({ kind: "batch", model: "gemini-2.5-flash", requests: [request("c")] }),
    );
    await providerError(
      () => provider.fetchResult!(jobId),
      (e) => assert.equal(e.retriable, true),
    );
    gemini.update(jobId, {
      done: true,
      error: { code: 3, message: "bad request line", status: "INVALID_ARGUMENT" },
    });
    await providerError(
      () => provider.fetchResult!(jobId),
      (e) => {
        assert.equal(e.retriable, false);
        assert.match(e.message, /bad request line/);
      },
    );
  });

  test("batch states map to job states", async () => {
    const { jobId } = await provider.create(
      job({ kind: "batch", model: "gemini-2.5-flash", requests: [request("s")] }),
    );
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ done: false, metadata: { state: "BATCH_STATE_PENDING" } }, { status: "running" }],
      [{ done: false, metadata: { state: "BATCH_STATE_RUNNING" } }, { status: "running" }],
      [
        { done: true, metadata: { state: "BATCH_STATE_SUCCEEDED" } },
        { status: "succeeded", output: null },
      ],
      [
        {
          done: true,
          metadata: { state: "BATCH_STATE_FAILED" },
          error: { code: 13, message: "oops", status: "INTERNAL" },
        },
        { status: "failed", error: { code: "INTERNAL", message: "oops" } },
      ],
      [
        { done: true, metadata: { state: "BATCH_STATE_EXPIRED" } },
        {
          status: "failed",
          error: { code: "expired", message: "The batch was not processed before it expired." },
        },
      ],
      [{ done: true, metadata: { state: "BATCH_STATE_CANCELLED" } }, { status: "canceled" }],
      [{ done: false, metadata: {} }, { status: "running" }],
    ];
    for (const [patch, expected] of cases) {
      gemini.update(jobId, { error: undefined, ...patch });
      assert.deepEqual(await provider.status!(jobId), { jobId, ...expected }, JSON.stringify(patch));
    }
  });

  test("interaction statuses map to job states", async () => {
    const { jobId } = await provider.create(job({ model: "gemini-3-pro-preview", input: "states" }));
    const cases: [string, string][] = [
      ["in_progress", "running"],
      ["completed", "succeeded"],
      ["failed", "failed"],
      ["incomplete", "failed"],
      ["budget_exceeded", "failed"],
      ["requires_action", "failed"],
      ["cancelled", "canceled"],
    ];
    for (const [status, expected] of cases) {
      gemini.update(jobId, { status });
      assert.equal((await provider.status!(jobId)).status, expected, status);
    }
    gemini.update(jobId, { status: "thinking" });
    await providerError(
      () => provider.status!(jobId),
      (e) => assert.match(e.message, /unknown interaction status "thinking"/),
    );
  });

  test("cancel: a batch by :cancel, an interaction by /cancel", async () => {
    const batch = await provider.create(
      job({ kind: "batch", model: "gemini-2.5-flash", requests: [request("stop")] }),
    );
    await provider.cancel!(batch.jobId);
    assert.equal(last().method, "POST");
    assert.equal(last().path, `/v1beta/${batch.jobId}:cancel`);
    assert.equal((await provider.status!(batch.jobId)).status, "canceled");

    const interaction = await provider.create(job({ model: "gemini-3-pro-preview", input: "stop" }));
    await provider.cancel!(interaction.jobId);
    assert.equal(last().path, `/v1beta/${interaction.jobId}/cancel`);
    assert.equal((await provider.status!(interaction.jobId)).status, "canceled");
  });
});
