import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { LonghaulError } from "../src/core/errors.ts";
import { openaiProvider } from "../src/providers/openai/openai-provider.ts";
import type { Provider } from "../src/providers/provider.ts";
import { headerOf } from "./fixtures/json-standin.ts";
import { type OpenAIStandin, startOpenAIStandin } from "./fixtures/openai-standin.ts";
import { jobRequests, providerError, validationError } from "./fixtures/provider-asserts.ts";

const KEY = "sk-test-openai-standin";
let openai: OpenAIStandin;
let provider: Provider;

before(async () => {
  openai = await startOpenAIStandin(KEY);
  provider = openaiProvider({ apiKey: KEY, baseUrl: openai.baseUrl, timeoutMs: 2000 });
});
after(() => openai.close());

const job = jobRequests("summarize", "https://hooks.example.com/hooks/openai");

const last = () => openai.requests.at(-1)!;

describe("create", () => {
  test("a background response is POST /responses with background, metadata, the key and the rest of the input", async () => {
    const req = job({ model: "gpt-5", input: "Summarize this.", metadata: { team: "docs" } });
    const created = await provider.create(req);
    assert.match(created.jobId, /^resp_/);
    assert.equal(created.status, "created");
    const sent = last();
    assert.equal(sent.method, "POST");
    assert.equal(sent.path, "/v1/responses");
    assert.equal(headerOf(sent, "authorization"), `Bearer ${KEY}`);
    assert.equal(headerOf(sent, "idempotency-key"), req.idempotencyKey);
    assert.deepEqual(sent.body, {
      model: "gpt-5",
      input: "Summarize this.",
      background: true,
      metadata: { team: "docs", longhaul_task: req.taskId, longhaul_step: "summarize" },
    });
  });

  test("the same idempotency key returns the same response and creates nothing new", async () => {
    const req = job({ model: "gpt-5", input: "Once." });
    const first = await provider.create(req);
    const before = openai.objects.size;
    const again = await provider.create(req);
    assert.equal(again.jobId, first.jobId);
    assert.equal(openai.objects.size, before);
  });

  test("kind batch is POST /batches with input_file_id, endpoint, a 24h window by default and metadata", async () => {
    const req = job({ kind: "batch", input_file_id: "file-abc", endpoint: "/v1/responses" });
    const created = await provider.create(req);
    assert.match(created.jobId, /^batch_/);
    const sent = last();
    assert.equal(sent.path, "/v1/batches");
    assert.equal(headerOf(sent, "idempotency-key"), req.idempotencyKey);
    assert.deepEqual(sent.body, {
      input_file_id: "file-abc",
      endpoint: "/v1/responses",
      completion_window: "24h",
      metadata: { longhaul_task: req.taskId, longhaul_step: "summarize" },
    });
    const again = await provider.create(req);
    assert.equal(again.jobId, created.jobId);
  });

  test("a batch without input_file_id is refused before any request, not retriably", async () => {
    const count = openai.requests.length;
    await providerError(
      () => provider.create(job({ kind: "batch", endpoint: "/v1/responses" })),
      (e) => {
        assert.equal(e.retriable, false);
        assert.match(e.message, /input_file_id/);
      },
    );
    assert.equal(openai.requests.length, count);
  });
});

describe("errors", () => {
  test("a 500 is retriable, and the retry with the same key creates the job once", async () => {
    const req = job({ model: "gpt-5", input: "Flaky." });
    openai.failNext(500);
    await providerError(
      () => provider.create(req),
      (e) => {
        assert.equal(e.retriable, true);
        assert.equal(e.status, 500);
      },
    );
    const created = await provider.create(req);
    const again = await provider.create(req);
    assert.equal(again.jobId, created.jobId);
  });

  test("429 and 408 are retriable", async () => {
    for (const status of [429, 408]) {
      openai.failNext(status);
      await providerError(
        () => provider.create(job({ model: "gpt-5", input: "x" })),
        (e) => assert.equal(e.retriable, true),
      );
    }
  });

  test("a 400 is not retriable and says what OpenAI said", async () => {
    openai.failNext(400);
    await providerError(
      () => provider.create(job({ model: "gpt-5", input: "x" })),
      (e) => {
        assert.equal(e.retriable, false);
        assert.equal(e.status, 400);
        assert.match(e.message, /failure injected by the test/);
      },
    );
  });

  test("a wrong API key is a 401, not retriable", async () => {
    const wrong = openaiProvider({ apiKey: "sk-wrong", baseUrl: openai.baseUrl });
    await providerError(
      () => wrong.create(job({ model: "gpt-5", input: "x" })),
      (e) => {
        assert.equal(e.status, 401);
        assert.equal(e.retriable, false);
      },
    );
  });

  test("a refused connection is retriable", async () => {
    const closed = await startOpenAIStandin(KEY);
    await closed.close();
    const p = openaiProvider({ apiKey: KEY, baseUrl: closed.baseUrl, timeoutMs: 1000 });
    await providerError(
      () => p.create(job({ model: "gpt-5", input: "x" })),
      (e) => assert.equal(e.retriable, true),
    );
  });

  test("a missing API key is a configuration error", () => {
    assert.throws(
      () => openaiProvider({ apiKey: "" }),
      (e: unknown) => e instanceof LonghaulError && e.code === "CONFIG_INVALID",
    );
  });
});

describe("parseEvent", () => {
  const cases = [
    ["response.completed", "resp_1", "job.succeeded"],
    ["response.failed", "resp_1", "job.failed"],
    ["response.incomplete", "resp_1", "job.failed"],
    ["response.cancelled", "resp_1", "job.canceled"],
    ["batch.completed", "batch_1", "job.succeeded"],
    ["batch.failed", "batch_1", "job.failed"],
    // Its result decides: the items of a batch built from requests, a failure for the older kind.
    ["batch.expired", "batch_1", "job.succeeded"],
    ["batch.cancelled", "batch_1", "job.canceled"],
  ] as const;
  for (const [type, id, expected] of cases) {
    test(`${type} is ${expected} for ${id}, with no output so the worker fetches it`, () => {
      const event = provider.parseEvent({
        id: "evt_685343a1381c819085d44c354e1b330e",
        object: "event",
        created_at: 1750287018,
        type,
        data: { id },
      });
      assert.deepEqual(event, { eventId: "evt_685343a1381c819085d44c354e1b330e", type: expected, jobId: id });
    });
  }

  test("an OpenAI event that ends no job is refused by name", () => {
    validationError(
      () =>
        provider.parseEvent({
          id: "evt_1",
          object: "event",
          type: "fine_tuning.job.succeeded",
          data: { id: "ftjob_1" },
        }),
      /fine_tuning\.job\.succeeded.*does not end a background response or a batch/,
    );
  });

  test("a body that is not an OpenAI event is refused", () => {
    validationError(() => provider.parseEvent("nope"), /not a JSON object/);
    validationError(() => provider.parseEvent([1, 2]), /not a JSON object/);
    validationError(
      () => provider.parseEvent({ type: "response.completed", data: { id: "resp_1" } }),
      /id must be/,
    );
    validationError(() => provider.parseEvent({ id: "evt_1", data: { id: "resp_1" } }), /type must be/);
    validationError(() => provider.parseEvent({ id: "evt_1", type: "response.completed" }), /data\.id/);
    validationError(
      () => provider.parseEvent({ id: "evt_1", type: "response.completed", data: { id: "" } }),
      /data\.id/,
    );
  });
});

describe("fetchResult, status, cancel", () => {
  test("a completed response gives its text and usage as prompt/completion/total", async () => {
    const { jobId } = await provider.create(job({ model: "gpt-5", input: "Hi" }));
    openai.update(jobId, {
      status: "completed",
      output: [
        { type: "reasoning", id: "rs_1", summary: [] },
        {
          type: "message",
          id: "msg_1",
          role: "assistant",
          content: [
            { type: "output_text", text: "Otters ", annotations: [] },
            { type: "output_text", text: "in space.", annotations: [] },
          ],
        },
      ],
      usage: {
        input_tokens: 12,
        output_tokens: 34,
        total_tokens: 46,
        output_tokens_details: { reasoning_tokens: 8 },
      },
    });
    const result = await provider.fetchResult!(jobId);
    assert.deepEqual(result, {
      output: "Otters in space.",
      usage: { prompt_tokens: 12, completion_tokens: 34, total_tokens: 46 },
    });
    assert.equal(last().path, `/v1/responses/${jobId}`);
    assert.equal(last().method, "GET");
  });

  test("a response with no text gives its output array", async () => {
    const { jobId } = await provider.create(job({ model: "gpt-5", input: "Call a tool" }));
    const output = [
      { type: "function_call", id: "fc_1", call_id: "call_1", name: "lookup", arguments: "{}" },
    ];
    openai.update(jobId, { status: "completed", output });
    const result = await provider.fetchResult!(jobId);
    assert.deepEqual(result.output, output);
    assert.equal(result.usage, undefined);
  });

  test("a completed batch gives its files, request counts and usage", async () => {
    const { jobId } = await provider.create(
      job({ kind: "batch", input_file_id: "file-1", endpoint: "/v1/chat/completions" }),
    );
    openai.update(jobId, {
      status: "completed",
      output_file_id: "file-out",
      error_file_id: "file-err",
      request_counts: { total: 3, completed: 2, failed: 1 },
      usage: { input_tokens: 100, output_tokens: 50, total_tokens: 150 },
    });
    const result = await provider.fetchResult!(jobId);
    assert.deepEqual(result, {
      output: {
        output_file_id: "file-out",
        error_file_id: "file-err",
        request_counts: { total: 3, completed: 2, failed: 1 },
      },
      usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 },
    });
    assert.equal(last().path, `/v1/batches/${jobId}`);
  });

  test("fetching the result of an unfinished job is retriable; of a failed one, not", async () => {
    const { jobId } = await provider.create(job({ model: "gpt-5", input: "slow" }));
    openai.update(jobId, { status: "in_progress" });
    await providerError(
      () => provider.fetchResult!(jobId),
      (e) => assert.equal(e.retriable, true),
    );
    openai.update(jobId, { status: "failed", error: { code: "server_error", message: "boom" } });
    await providerError(
      () => provider.fetchResult!(jobId),
      (e) => {
        assert.equal(e.retriable, false);
        assert.match(e.message, /failed \(boom\)/);
      },
    );
  });

  test("response statuses map to job states", async () => {
    const { jobId } = await provider.create(job({ model: "gpt-5", input: "states" }));
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ status: "queued" }, { status: "running" }],
      [{ status: "in_progress" }, { status: "running" }],
      [
        {
          status: "completed",
          output_text: "done",
          usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 },
        },
        {
          status: "succeeded",
          output: "done",
          usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
        },
      ],
      [
        { status: "failed", error: { code: "rate_limit_exceeded", message: "slow down" } },
        { status: "failed", error: { code: "rate_limit_exceeded", message: "slow down" } },
      ],
      [
        { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } },
        {
          status: "failed",
          error: { code: "incomplete", message: "The response is incomplete (max_output_tokens)." },
        },
      ],
      [{ status: "cancelled" }, { status: "canceled" }],
    ];
    for (const [patch, expected] of cases) {
      openai.update(jobId, { output_text: undefined, error: null, usage: null, ...patch });
      assert.deepEqual(await provider.status!(jobId), { jobId, ...expected }, JSON.stringify(patch));
    }
  });

  test("batch statuses map to job states", async () => {
    const { jobId } = await provider.create(
      job({ kind: "batch", input_file_id: "file-2", endpoint: "/v1/embeddings" }),
    );
    for (const status of ["validating", "in_progress", "finalizing", "cancelling"]) {
      openai.update(jobId, { status });
      assert.deepEqual(await provider.status!(jobId), { jobId, status: "running" }, status);
    }
    openai.update(jobId, {
      status: "failed",
      errors: { object: "list", data: [{ code: "invalid_json_line", message: "bad JSON", line: 4 }] },
    });
    assert.deepEqual(await provider.status!(jobId), {
      jobId,
      status: "failed",
      error: { code: "invalid_json_line", message: "line 4: bad JSON" },
    });
    openai.update(jobId, { status: "expired" });
    assert.equal((await provider.status!(jobId)).error?.code, "expired");
    openai.update(jobId, { status: "cancelled" });
    assert.deepEqual(await provider.status!(jobId), { jobId, status: "canceled" });
    openai.update(jobId, { status: "completed", output_file_id: "file-o" });
    const done = await provider.status!(jobId);
    assert.equal(done.status, "succeeded");
    assert.deepEqual(done.output, {
      output_file_id: "file-o",
      error_file_id: null,
      request_counts: { total: 0, completed: 0, failed: 0 },
    });
  });

  test("an unknown status or an unknown job is a provider error, not a guess", async () => {
    const { jobId } = await provider.create(job({ model: "gpt-5", input: "odd" }));
    openai.update(jobId, { status: "paused" });
    await providerError(
      () => provider.status!(jobId),
      (e) => assert.match(e.message, /unknown response status "paused"/),
    );
    // Only the table's own words count: an inherited property name names no status.
    for (const word of ["constructor", "__proto__", "toString"]) {
      openai.update(jobId, { status: word });
      await providerError(
        () => provider.status!(jobId),
        (e) => assert.match(e.message, new RegExp(`unknown response status "${word}"`)),
      );
    }
    await providerError(
      () => provider.status!("resp_missing"),
      (e) => {
        assert.equal(e.status, 404);
        assert.equal(e.retriable, false);
      },
    );
  });

  test("cancel posts to the response's and the batch's cancel route", async () => {
    const response = await provider.create(job({ model: "gpt-5", input: "stop me" }));
    await provider.cancel!(response.jobId);
    assert.equal(last().path, `/v1/responses/${response.jobId}/cancel`);
    assert.equal(last().method, "POST");
    assert.equal(openai.objects.get(response.jobId)?.status, "cancelled");

    const batch = await provider.create(
      job({ kind: "batch", input_file_id: "file-3", endpoint: "/v1/responses" }),
    );
    await provider.cancel!(batch.jobId);
    assert.equal(last().path, `/v1/batches/${batch.jobId}/cancel`);
    assert.equal(openai.objects.get(batch.jobId)?.status, "cancelling");
  });

  test("cancelling a job that already ended (409) is not an error", async () => {
    const batch = await provider.create(
      job({ kind: "batch", input_file_id: "file-4", endpoint: "/v1/responses" }),
    );
    openai.update(batch.jobId, { status: "completed" });
    await provider.cancel!(batch.jobId);
    assert.equal(openai.objects.get(batch.jobId)?.status, "completed");
  });
});
