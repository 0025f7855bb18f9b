import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { httpProvider } from "../src/providers/http/http-provider.ts";
import type { Provider } from "../src/providers/provider.ts";
import { type HttpStandin, startHttpStandin } from "./fixtures/http-standin.ts";
import { headerOf } from "./fixtures/json-standin.ts";
import { jobRequests, providerError, validationError } from "./fixtures/provider-asserts.ts";

const TOKEN = "ocr-test-token";
const HOOK = "https://hooks.example.com/hooks/ocr";
let ocr: HttpStandin;
let provider: Provider;

before(async () => {
  ocr = await startHttpStandin(TOKEN);
  provider = httpProvider({
    name: "ocr",
    baseUrl: ocr.url,
    statusPath: "/jobs/{id}",
    cancelPath: "/jobs/{id}/cancel",
    headers: { authorization: `Bearer ${TOKEN}` },
    timeoutMs: 2000,
  });
});
after(() => ocr.close());

const job = jobRequests("ocr", HOOK, { document: "https://files.example.com/scan.pdf", pages: 200 });

const last = () => ocr.requests.at(-1)!;

describe("create", () => {
  test("POSTs {input, callback_url, idempotency_key} with Idempotency-Key and the configured headers", async () => {
    const req = job();
    const created = await provider.create(req);
    assert.deepEqual(created, { jobId: "ocr_1", status: "created" });
    const sent = last();
    assert.equal(sent.path, "/jobs");
    assert.equal(headerOf(sent, "authorization"), `Bearer ${TOKEN}`);
    assert.equal(headerOf(sent, "idempotency-key"), req.idempotencyKey);
    assert.deepEqual(sent.body, {
      input: req.input,
      callback_url: HOOK,
      idempotency_key: req.idempotencyKey,
    });
  });

  test("the same key returns the same job", async () => {
    const req = job();
    const first = await provider.create(req);
    const count = ocr.jobs.size;
    assert.equal((await provider.create(req)).jobId, first.jobId);
    assert.equal(ocr.jobs.size, count);
  });

  test("an answer that names the job {id} instead of {job_id} is read too", async () => {
    ocr.answerWith = "id";
    try {
      const created = await provider.create(job());
      assert.match(created.jobId, /^ocr_\d+$/);
    } finally {
      ocr.answerWith = "job_id";
    }
  });

  test("createPath moves the creation route", async () => {
    const elsewhere = httpProvider({
      name: "ocr",
      baseUrl: `${ocr.url}/v2`,
      createPath: "/scan",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    await providerError(
      () => elsewhere.create(job()),
      (e) => assert.equal(e.status, 404),
    );
    assert.equal(last().path, "/v2/scan");
  });
});

describe("errors", () => {
  test("a 500 is retriable, and the retry with the same key creates the job once", async () => {
    const req = job();
    ocr.failNext(500);
    await providerError(
      () => provider.create(req),
      (e) => assert.equal(e.retriable, true),
    );
    const created = await provider.create(req);
    assert.equal((await provider.create(req)).jobId, created.jobId);
  });

  test("a 400 and a 401 are not retriable", async () => {
    ocr.failNext(400);
    await providerError(
      () => provider.create(job()),
      (e) => {
        assert.equal(e.retriable, false);
        assert.match(e.message, /HTTP 400: failure injected by the test/);
      },
    );
    const unauthorized = httpProvider({ name: "ocr", baseUrl: ocr.url });
    await providerError(
      () => unauthorized.create(job()),
      (e) => {
        assert.equal(e.status, 401);
        assert.equal(e.retriable, false);
      },
    );
  });

  test("a 2xx answer without a job id is a provider error, not a job", async () => {
    const odd = httpProvider({
      name: "ocr",
      baseUrl: "http://127.0.0.1:9",
      fetchImpl: async () => new Response(JSON.stringify({ accepted: true }), { status: 202 }),
    });
    await providerError(
      () => odd.create(job()),
      (e) => {
        assert.equal(e.retriable, false);
        assert.match(e.message, /HTTP 202 carried no job_id or id/);
      },
    );
  });
});

describe("parseEvent", () => {
  for (const type of ["job.created", "job.running", "job.succeeded", "job.failed", "job.canceled"] as const) {
    test(`the provider event shape: ${type}`, () => {
      const event = provider.parseEvent({ id: "evt_1", type, data: { job_id: "ocr_1" } });
      assert.deepEqual(event, { eventId: "evt_1", type, jobId: "ocr_1" });
    });
  }

  test("the provider event shape carries output, error and usage", () => {
    const event = provider.parseEvent({
      id: "evt_2",
      type: "job.succeeded",
      data: { job_id: "ocr_1", output: { pages: 200, text_url: "s3://x" }, usage: { total_tokens: 9 } },
    });
    assert.deepEqual(event.output, { pages: 200, text_url: "s3://x" });
    assert.deepEqual(event.usage, { total_tokens: 9 });
    const failed = provider.parseEvent({
      id: "evt_3",
      type: "job.failed",
      data: { job_id: "ocr_1", error: { code: "bad_pdf", message: "page 3 is unreadable" } },
    });
    assert.deepEqual(failed.error, { code: "bad_pdf", message: "page 3 is unreadable" });
  });

  test("a plain callback {job_id, status, result} is read, its event id made from job and status", () => {
    assert.deepEqual(provider.parseEvent({ job_id: "ocr_1", status: "succeeded", result: { text: "…" } }), {
      eventId: "ocr_1:succeeded",
      type: "job.succeeded",
      jobId: "ocr_1",
      output: { text: "…" },
    });
    assert.deepEqual(provider.parseEvent({ job_id: "ocr_1", status: "running" }), {
      eventId: "ocr_1:running",
      type: "job.running",
      jobId: "ocr_1",
    });
    assert.deepEqual(
      provider.parseEvent({ id: "cb_9", job_id: "ocr_1", status: "failed", error: "page 3 is unreadable" }),
      {
        eventId: "cb_9",
        type: "job.failed",
        jobId: "ocr_1",
        error: { message: "page 3 is unreadable" },
      },
    );
  });

  test("a body in neither shape is refused", () => {
    validationError(() => provider.parseEvent("ok"), /not a JSON object/);
    validationError(
      () => provider.parseEvent({ id: "e", type: "job.exploded", data: { job_id: "ocr_1" } }),
      /type must be one of/,
    );
    validationError(() => provider.parseEvent({ id: "e", type: "job.succeeded" }), /data\.job_id/);
    validationError(
      () => provider.parseEvent({ type: "job.succeeded", data: { job_id: "ocr_1" } }),
      /id must be/,
    );
    validationError(
      () => provider.parseEvent({ job_id: "ocr_1", status: "paused" }),
      /status must be one of/,
    );
    validationError(() => provider.parseEvent({ status: "succeeded" }), /job_id must be/);
    validationError(
      () => provider.parseEvent({ job_id: "ocr_1", status: "failed", error: 42 }),
      /error must be/,
    );
  });
});

describe("status, fetchResult, cancel", () => {
  test("status reads statusPath and maps the service's words", async () => {
    const { jobId } = await provider.create(job());
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ status: "queued" }, { status: "created" }],
      [{ status: "processing" }, { status: "running" }],
      [
        { status: "completed", result: { text: "done" } },
        { status: "succeeded", output: { text: "done" } },
      ],
      [
        { status: "failed", result: undefined, error: { message: "unreadable" } },
        { status: "failed", error: { message: "unreadable" } },
      ],
      [{ status: "cancelled", error: undefined }, { status: "canceled" }],
    ];
    for (const [patch, expected] of cases) {
      ocr.update(jobId, patch);
      assert.deepEqual(await provider.status!(jobId), { jobId, ...expected }, JSON.stringify(patch));
    }
    assert.equal(last().path, `/jobs/${jobId}`);
  });

  test("fetchResult gives a finished job's output and usage", async () => {
    const { jobId } = await provider.create(job());
    ocr.update(jobId, {
      status: "succeeded",
      output: { pages: 2 },
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    });
    assert.deepEqual(await provider.fetchResult!(jobId), {
      output: { pages: 2 },
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    });
  });

  test("cancel posts cancelPath; a job that already ended (409) is not an error", async () => {
    const { jobId } = await provider.create(job());
    await provider.cancel!(jobId);
    assert.equal(last().path, `/jobs/${jobId}/cancel`);
    assert.equal(ocr.jobs.get(jobId)?.status, "canceled");
    await provider.cancel!(jobId);
    assert.equal(ocr.requests.at(-1)?.path, `/jobs/${jobId}/cancel`);
  });

  test("without statusPath and cancelPath the provider offers neither", () => {
    const bare = httpProvider({ name: "ocr", baseUrl: ocr.url });
    assert.equal(bare.status, undefined);
    assert.equal(bare.cancel, undefined);
    assert.equal(bare.fetchResult, undefined);
  });
});
