import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { openS3BlobStore } from "../src/blobs/index.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { task } from "../src/index.ts";
import { openaiProvider } from "../src/providers/openai/openai-provider.ts";
import { JobResultFailure, type Provider } from "../src/providers/provider.ts";
import {
  type BatchLine,
  type BatchStandin,
  expiredLine,
  failedLine,
  okLine,
  startBatchStandin,
} from "./fixtures/openai-batch-standin.ts";
import { jobRequests } from "./fixtures/provider-asserts.ts";
import { blobTempsUnder, tempDir } from "./helpers.ts";
import { startS3StandIn } from "./s3-stand-in.ts";
import { SIM_SECRET, type Stack, startStack } from "./stack.ts";
import { end, submit } from "./task-waits.ts";

// The OpenAI adapter's batches built request by request, against a stand-in of the Files and
// Batch APIs over real HTTP: the upload, the creation, the download of the result files into
// the blob store and their merge into items; a download cut short is retried; a result file
// that is not JSON Lines fails the job with PROVIDER_RESULT_INVALID naming the line.

const KEY = "sk-test-openai-batches";

/** Requests whose body says how the stand-in answers them: `ok`, `fail`, `skip` (expired) or `bad`. */
function answers(lines: BatchLine[]): { output: string; error: string } {
  let output = "";
  let error = "";
  for (const { custom_id, body } of lines) {
    const how = body.how as string;
    const n = Number(body.n);
    if (how === "ok")
      output += okLine(custom_id, {
        id: `resp_${custom_id}`,
        output_text: `answer ${n}`,
        usage: { input_tokens: n, output_tokens: 2, total_tokens: n + 2 },
      });
    else if (how === "fail") error += failedLine(custom_id, 500, "the model is overloaded");
    else if (how === "bad") output += "this is not JSON\n";
    else if (how === "stranger") output += okLine("nobody-sent-this", { output_text: "?" });
    else if (how === "late") error += expiredLine(custom_id);
  }
  // A batch with a request it could not run in time expires, keeping what it answered.
  const late = lines.some((l) => l.body.how === "late");
  return { output, error, ...(late ? { status: "expired" as const } : {}) };
}

const request = (custom_id: string, how: string, n = 1) => ({ custom_id, body: { how, n } });

describe("OpenAI batches from requests (adapter)", () => {
  let standin: BatchStandin;
  let provider: Provider;
  const tmp = tempDir();
  const files = new FsBlobStore({ root: join(tmp.dir, "blobs") });
  const job = jobRequests("review", "https://hooks.example.com/hooks/openai");
  before(async () => {
    standin = await startBatchStandin({ apiKey: KEY, results: answers });
    provider = openaiProvider({ apiKey: KEY, baseUrl: standin.baseUrl, timeoutMs: 5000 });
  });
  after(async () => {
    await standin.close();
    tmp.cleanup();
  });

  test("upload + create + download + merge: items in request order, usage per item and summed", async () => {
    const req = job({
      kind: "batch",
      endpoint: "/v1/responses",
      requests: [request("a", "ok", 3), request("b", "fail"), request("c", "skip"), request("d", "ok", 5)],
      metadata: { team: "docs" },
    });
    const created = await provider.create(req);
    const upload = standin.requests.find((r) => r.path === "/v1/files")!;
    assert.match(String(upload.headers["content-type"]), /^multipart\/form-data/);
    assert.equal(upload.headers["idempotency-key"], `${req.idempotencyKey}:input`);
    const batch = standin.batches.get(created.jobId)!;
    const create = standin.requests.find((r) => r.path === "/v1/batches")!;
    assert.equal(create.headers["idempotency-key"], req.idempotencyKey);
    assert.deepEqual(batch.metadata, {
      team: "docs",
      longhaul_task: req.taskId,
      longhaul_step: "review",
      longhaul_items: "true",
    });
    assert.equal(batch.completion_window, "24h");
    const input = standin.files.get(String(batch.input_file_id))!.toString("utf8");
    assert.equal(
      input,
      ["a", "b", "c", "d"]
        .map(
          (id, i) =>
            `${JSON.stringify({ custom_id: id, method: "POST", url: "/v1/responses", body: { how: ["ok", "fail", "skip", "ok"][i], n: [3, 1, 1, 5][i] } })}\n`,
        )
        .join(""),
    );

    const result = await provider.fetchResult!(created.jobId, { files });
    const { items } = result.output as { items: Record<string, unknown>[] };
    assert.deepEqual(items, [
      {
        custom_id: "a",
        status: "succeeded",
        output: {
          id: "resp_a",
          output_text: "answer 3",
          usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 },
        },
        usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 },
      },
      {
        custom_id: "b",
        status: "failed",
        error: { code: "server_error", message: "the model is overloaded" },
      },
      {
        custom_id: "c",
        status: "expired",
        error: { code: "batch_expired", message: "the batch ended without running this request" },
      },
      {
        custom_id: "d",
        status: "succeeded",
        output: {
          id: "resp_d",
          output_text: "answer 5",
          usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
        },
        usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
      },
    ]);
    assert.deepEqual(result.usage, { prompt_tokens: 8, completion_tokens: 4, total_tokens: 12 });
    const kept = await files.stat(`providers/openai/batches/${created.jobId}/output.jsonl`);
    assert.equal(kept?.size, standin.files.get(String(batch.output_file_id))!.length);

    // Read again (a retried event): the kept files are read, nothing is downloaded again.
    const downloads = standin.requests.filter((r) => r.path.endsWith("/content")).length;
    const again = await provider.fetchResult!(created.jobId, { files });
    assert.deepEqual(again, result);
    assert.equal(standin.requests.filter((r) => r.path.endsWith("/content")).length, downloads);
  });

  test("a download cut short, then refused 503, is retried until whole; nothing half-written is kept", async () => {
    const created = await provider.create(
      job({
        kind: "batch",
        endpoint: "/v1/responses",
        requests: [request("x", "ok", 4), request("y", "ok", 6)],
      }),
    );
    const outputId = String(standin.batches.get(created.jobId)!.output_file_id);
    standin.servings.push("cut", 503);
    const result = await provider.fetchResult!(created.jobId, { files });
    assert.deepEqual(
      (result.output as { items: { custom_id: string; status: string }[] }).items.map((i) => [
        i.custom_id,
        i.status,
      ]),
      [
        ["x", "succeeded"],
        ["y", "succeeded"],
      ],
    );
    assert.equal(standin.requests.filter((r) => r.path === `/v1/files/${outputId}/content`).length, 3);
    const bytes = readFileSync(
      join(tmp.dir, "blobs", "providers", "openai", "batches", created.jobId, "output.jsonl"),
    );
    assert.deepEqual(bytes, standin.files.get(outputId));
    assert.deepEqual(blobTempsUnder(join(tmp.dir, "blobs")), []);
  });

  test("without a blob store the files are read into memory, with the same result", async () => {
    const created = await provider.create(
      job({ kind: "batch", endpoint: "/v1/responses", requests: [request("m", "ok", 2)] }),
    );
    const result = await provider.fetchResult!(created.jobId);
    assert.deepEqual((result.output as { items: unknown[] }).items, [
      {
        custom_id: "m",
        status: "succeeded",
        output: {
          id: "resp_m",
          output_text: "answer 2",
          usage: { input_tokens: 2, output_tokens: 2, total_tokens: 4 },
        },
        usage: { input_tokens: 2, output_tokens: 2, total_tokens: 4 },
      },
    ]);
  });

  test("a batch built from requests that expired ends with its items, the unrun ones expired", async () => {
    const created = await provider.create(
      job({
        kind: "batch",
        endpoint: "/v1/responses",
        requests: [request("e1", "ok", 1), request("e2", "late")],
      }),
    );
    assert.equal((await provider.status!(created.jobId)).status, "succeeded");
    const result = await provider.fetchResult!(created.jobId, { files });
    assert.deepEqual(
      (result.output as { items: { custom_id: string; status: string }[] }).items.map((i) => [
        i.custom_id,
        i.status,
      ]),
      [
        ["e1", "succeeded"],
        ["e2", "expired"],
      ],
    );
  });

  test("a batch of the input_file_id kind that expired is a failure, not a result", async () => {
    const input = `${JSON.stringify({ custom_id: "f1", method: "POST", url: "/v1/responses", body: { how: "late" } })}\n`;
    const form = new FormData();
    form.append("purpose", "batch");
    form.append("file", new Blob([input]), "in.jsonl");
    const uploaded = await fetch(`${standin.baseUrl}/files`, {
      method: "POST",
      body: form,
      headers: { authorization: `Bearer ${KEY}` },
    });
    const fileId = ((await uploaded.json()) as { id: string }).id;
    const created = await provider.create(
      job({ kind: "batch", endpoint: "/v1/responses", input_file_id: fileId }),
    );
    assert.equal((await provider.status!(created.jobId)).status, "failed");
    await assert.rejects(provider.fetchResult!(created.jobId, { files }), (e: unknown) => {
      assert.ok(e instanceof JobResultFailure, String(e));
      assert.equal(e.failure.code, "expired");
      return true;
    });
  });

  for (const [how, pattern] of [
    ["bad", /output file file-\d+, line 2: not JSON/],
    [
      "stranger",
      /output file file-\d+, line 2: names custom_id "nobody-sent-this", which the batch did not send/,
    ],
  ] as const) {
    test(`a result line that is ${how === "bad" ? "not JSON" : "an unknown custom_id"} is PROVIDER_RESULT_INVALID naming the file and line`, async () => {
      const created = await provider.create(
        job({ kind: "batch", endpoint: "/v1/responses", requests: [request("p", "ok"), request("q", how)] }),
      );
      await assert.rejects(provider.fetchResult!(created.jobId, { files }), (e: unknown) => {
        assert.ok(e instanceof LonghaulError, String(e));
        assert.equal(e.code, "PROVIDER_RESULT_INVALID");
        assert.match(e.message, pattern);
        return true;
      });
    });
  }
});

describe("OpenAI batches from requests (a task over HTTP)", () => {
  let stack: Stack;
  let standin: BatchStandin;
  const review = task({
    id: "openai_batch",
    run: async (input: { requests: BatchLine[] }, { step }) =>
      step.batch("review", { provider: "oai", endpoint: "/v1/responses", requests: input.requests }),
  });
  const resubmit = task({
    id: "openai_batch_resubmit",
    run: async (input: { requests: BatchLine[] }, { step }) =>
      step.batch("review", {
        provider: "oai",
        endpoint: "/v1/responses",
        requests: input.requests,
        resubmit: { maxRounds: 1, on: ["expired"] },
      }),
  });
  before(async () => {
    standin = await startBatchStandin({
      apiKey: KEY,
      results: answers,
      hooksUrl: () => `${stack.url}/hooks/oai`,
      secret: SIM_SECRET,
    });
    const oai = openaiProvider({ name: "oai", apiKey: KEY, baseUrl: standin.baseUrl, timeoutMs: 5000 });
    stack = await startStack({ taskTypes: [review, resubmit], providers: [oai] });
  });
  after(async () => {
    await stack.close();
    await standin.close();
  });

  test("the task's output holds the merged items and the job the items' usage", async () => {
    const id = await submit(stack, "openai_batch", {
      requests: [request("a", "ok", 4), request("b", "fail")],
    });
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded", JSON.stringify(t.error));
    assert.deepEqual(
      t.output.items.map((i: { status: string }) => i.status),
      ["succeeded", "failed"],
    );
    assert.deepEqual(t.jobs[0].usage, { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 });
  });

  test("batch.expired: the answered requests are kept and only the expired ones go out again", async () => {
    const resubmitting = await submit(stack, "openai_batch_resubmit", {
      requests: [request("a", "ok", 2), request("b", "late"), request("c", "ok", 3)],
    });
    const t = await end(stack, resubmitting);
    assert.equal(t.status, "succeeded", JSON.stringify(t.error));
    assert.deepEqual(
      t.output.items.map((i: { custom_id: string; status: string; round: number }) => [
        i.custom_id,
        i.status,
        i.round,
      ]),
      [
        ["a", "succeeded", 0],
        ["b", "expired", 1],
        ["c", "succeeded", 0],
      ],
    );
    const second = standin.files.get(String(standin.batches.get(t.jobs[1].job_id)!.input_file_id))!;
    assert.deepEqual(
      second
        .toString("utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).custom_id),
      ["b"],
      "only the expired request is resubmitted",
    );
  });

  test("a result file that is not JSON Lines fails the task with PROVIDER_RESULT_INVALID naming the line", async () => {
    const id = await submit(stack, "openai_batch", {
      requests: [request("a", "ok"), request("b", "ok"), request("c", "bad")],
    });
    const t = await end(stack, id);
    assert.equal(t.status, "failed");
    assert.equal(t.error.code, "PROVIDER_RESULT_INVALID");
    assert.match(t.error.message, /output file file-\d+, line 3: not JSON/);
  });

  test("a result line naming an unknown custom_id fails the task with PROVIDER_RESULT_INVALID naming the line", async () => {
    const id = await submit(stack, "openai_batch", { requests: [request("a", "stranger")] });
    const t = await end(stack, id);
    assert.equal(t.status, "failed");
    assert.equal(t.error.code, "PROVIDER_RESULT_INVALID");
    assert.match(t.error.message, /line 1: names custom_id "nobody-sent-this"/);
  });
});

describe("OpenAI batch result files in an S3 bucket", () => {
  test("a download cut short is retried and the bucket holds only the whole file", async () => {
    const tmp = tempDir("longhaul-s3-batch-");
    const s3 = await startS3StandIn({ bucket: "results" });
    const standin = await startBatchStandin({ apiKey: KEY, results: answers });
    try {
      const files = await openS3BlobStore({
        bucket: "results",
        prefix: "deploy-1/",
        spoolDir: tmp.dir,
        clientConfig: {
          endpoint: s3.endpoint,
          region: "us-east-1",
          forcePathStyle: true,
          credentials: { accessKeyId: "test", secretAccessKey: "test" },
        },
      });
      const provider = openaiProvider({ apiKey: KEY, baseUrl: standin.baseUrl, timeoutMs: 5000 });
      const job = jobRequests("review", "https://hooks.example.com/hooks/openai");
      const created = await provider.create(
        job({
          kind: "batch",
          endpoint: "/v1/responses",
          requests: [request("s", "ok", 3), request("t", "fail")],
        }),
      );
      standin.servings.push("cut");
      const result = await provider.fetchResult!(created.jobId, { files });
      assert.deepEqual(
        (result.output as { items: { status: string }[] }).items.map((i) => i.status),
        ["succeeded", "failed"],
      );
      const outputId = String(standin.batches.get(created.jobId)!.output_file_id);
      const kept = s3.objects.get(`deploy-1/providers/openai/batches/${created.jobId}/output.jsonl`);
      assert.deepEqual(kept?.body, standin.files.get(outputId));
      assert.deepEqual(
        [...s3.objects.keys()].sort(),
        ["error", "input", "output"].map(
          (f) => `deploy-1/providers/openai/batches/${created.jobId}/${f}.jsonl`,
        ),
      );
    } finally {
      await standin.close();
      await s3.close();
      tmp.cleanup();
    }
  });
});
