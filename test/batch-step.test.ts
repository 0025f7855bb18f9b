import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { task } from "../src/index.ts";
import { parseBriefEvent } from "../src/providers/brief-event.ts";
import type { CreateJobRequest, Provider } from "../src/providers/provider.ts";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";
import { SIM_SECRET, type Stack, startStack } from "./stack.ts";
import { end, submit } from "./task-waits.ts";

// step.batch over real HTTP against a SQLite file: a provider whose batch jobs end with items
// (as the OpenAI adapter's do) reports each round by a signed webhook; the task resubmits
// only the failed and expired requests.

interface Req {
  custom_id: string;
  body: { n: number; failRounds?: number; expireRounds?: number };
}

/** Which round a job is: `batch` is 0, `batch:round-2` is 2. */
const roundOf = (stepId: string) => Number(/:round-(\d+)$/.exec(stepId)?.[1] ?? 0);

function batchProvider(received: CreateJobRequest[], output?: (req: CreateJobRequest) => unknown): Provider {
  let n = 0;
  return {
    name: "batchy",
    parseEvent: (body) => parseBriefEvent(body),
    async create(req) {
      received.push(req);
      const jobId = `bj_${++n}`;
      const round = roundOf(req.stepId);
      const requests = (req.input as { requests: Req[] }).requests;
      // The provider answers in its own order (reversed), as a real batch API may.
      const items = [...requests].reverse().map(({ custom_id, body }) => {
        if (round < (body.failRounds ?? 0)) {
          return { custom_id, status: "failed", error: { code: "server_error", message: "try again" } };
        }
        if (round < (body.expireRounds ?? 0)) {
          return { custom_id, status: "expired", error: { code: "batch_expired", message: "expired" } };
        }
        return {
          custom_id,
          status: "succeeded",
          output: { answer: body.n * 2, round },
          usage: { input_tokens: body.n, output_tokens: 1, total_tokens: body.n + 1 },
        };
      });
      const event = {
        id: `evt_${jobId}`,
        type: "job.succeeded",
        data: { job_id: jobId, output: output ? output(req) : { items } },
      };
      setImmediate(() => void post(req.webhookUrl, event));
      return { jobId, status: "created" };
    },
  };
}

async function post(url: string, event: { id: string }) {
  const body = JSON.stringify(event);
  const ts = Math.floor(Date.now() / 1000);
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": event.id,
      "webhook-timestamp": String(ts),
      "webhook-signature": signStandardWebhook({ id: event.id, timestampS: ts, body, secret: SIM_SECRET }),
    },
    body,
  });
  assert.equal(res.status, 200, await res.text());
}

const review = task({
  id: "batch_review",
  run: async (input: { requests: Req[]; maxRounds?: number }, { step }) =>
    step.batch("review", {
      provider: "batchy",
      endpoint: "/v1/responses",
      requests: input.requests,
      resubmit: { maxRounds: input.maxRounds ?? 2 },
    }),
});

describe("step.batch", () => {
  let stack: Stack;
  const received: CreateJobRequest[] = [];
  before(async () => {
    stack = await startStack({ taskTypes: [review], providers: [batchProvider(received)] });
  });
  after(() => stack.close());

  test("100 requests, 10 failed and 5 expired: exactly those 15 are resubmitted, 100 results in order", async () => {
    const requests: Req[] = Array.from({ length: 100 }, (_, i) => ({
      custom_id: `r-${i}`,
      body: {
        n: i,
        ...(i % 10 === 3 ? { failRounds: 1 } : {}),
        ...(i % 20 === 7 ? { expireRounds: 1 } : {}),
      },
    }));
    const id = await submit(stack, "batch_review", { requests });
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded", JSON.stringify(t.error));
    const mine = received.filter((r) => r.taskId === id);
    assert.deepEqual(
      mine.map((r) => r.stepId),
      ["review", "review:round-1"],
      "one resubmission round, then nothing left to resubmit",
    );
    const resent = (mine[1]!.input as { requests: Req[] }).requests.map((r) => r.custom_id);
    const expected = requests.filter((r) => r.body.failRounds || r.body.expireRounds).map((r) => r.custom_id);
    assert.equal(expected.length, 15);
    assert.deepEqual(resent, expected, "exactly the failed and expired requests, in their order");
    const out = t.output;
    assert.equal(out.items.length, 100);
    assert.deepEqual(
      out.items.map((it: { custom_id: string }) => it.custom_id),
      requests.map((r) => r.custom_id),
      "in the order of the requests",
    );
    for (const [i, it] of out.items.entries()) {
      assert.equal(it.status, "succeeded");
      assert.equal(it.output.answer, i * 2);
      assert.deepEqual(it.usage, { input_tokens: i, output_tokens: 1, total_tokens: i + 1 });
      assert.equal(it.round, expected.includes(it.custom_id) ? 1 : 0);
    }
    assert.deepEqual(out.counts, { succeeded: 100, failed: 0, expired: 0 });
    assert.equal(out.rounds, 2);
    assert.equal(out.usage.total_tokens, (99 * 100) / 2 + 100);
  });

  test("a request still failing after maxRounds keeps its last answer", async () => {
    const requests: Req[] = [
      { custom_id: "ok", body: { n: 1 } },
      { custom_id: "stubborn", body: { n: 2, failRounds: 99 } },
    ];
    const id = await submit(stack, "batch_review", { requests, maxRounds: 3 });
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded");
    const mine = received.filter((r) => r.taskId === id).map((r) => r.stepId);
    assert.deepEqual(mine, ["review", "review:round-1", "review:round-2", "review:round-3"]);
    assert.equal(t.output.items[1].status, "failed");
    assert.equal(t.output.items[1].round, 3);
    assert.deepEqual(t.output.counts, { succeeded: 1, failed: 1, expired: 0 });
  });

  test("bad options fail the task with VALIDATION_FAILED before any job", async () => {
    const before = received.length;
    const id = await submit(stack, "batch_review", {
      requests: [
        { custom_id: "a", body: { n: 1 } },
        { custom_id: "a", body: { n: 2 } },
      ],
    });
    const t = await end(stack, id);
    assert.equal(t.status, "failed");
    assert.equal(t.error.code, "VALIDATION_FAILED");
    assert.match(t.error.message, /custom_id "a" is used twice/);
    const tooMany = await end(
      stack,
      await submit(stack, "batch_review", { requests: [{ custom_id: "a", body: {} }], maxRounds: 11 }),
    );
    assert.equal(tooMany.error.code, "VALIDATION_FAILED");
    assert.match(tooMany.error.message, /maxRounds/);
    assert.equal(received.length, before, "no job was created");
  });
});

describe("step.batch with a provider whose items are wrong", () => {
  let stack: Stack;
  const received: CreateJobRequest[] = [];
  before(async () => {
    const provider = batchProvider(received, (req) => {
      const first = (req.input as { requests: Req[] }).requests[0]!.custom_id;
      return first === "no-items"
        ? { output_file_id: "file-1" }
        : { items: [{ custom_id: "ghost", status: "succeeded" }] };
    });
    stack = await startStack({ taskTypes: [review], providers: [provider] });
  });
  after(() => stack.close());

  for (const [custom_id, message] of [
    ["no-items", /job review: the job's output has no items/],
    ["unknown", /job review: items\[0\] names custom_id "ghost", which this round did not send/],
  ] as const) {
    test(`${custom_id}: the task fails with PROVIDER_RESULT_INVALID naming the job`, async () => {
      const id = await submit(stack, "batch_review", { requests: [{ custom_id, body: { n: 1 } }] });
      const t = await end(stack, id);
      assert.equal(t.status, "failed");
      assert.equal(t.error.code, "PROVIDER_RESULT_INVALID");
      assert.match(t.error.message, message);
    });
  }
});
