import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { checkConfig, engineOptions } from "../src/cli/config.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { defineTask } from "../src/core/task-type.ts";
import type { Provider } from "../src/providers/provider.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

/** A provider that accepts every job and never reports back: only a deadline can end its wait. */
const silent: Provider = {
  name: "silent",
  async create(req) {
    return { jobId: `silent-${req.idempotencyKey}`, status: "running" };
  },
  parseEvent() {
    throw new Error("the silent provider sends no events");
  },
};

const silentJob = defineTask("test.silent-job", async (_input, step) =>
  step.job("work", { provider: "silent", input: { prompt: "never answered" } }),
);
const unheardEvent = defineTask("test.unheard-event", async (_input, step) => {
  const got = await step.waitForEvent("paid", { match: { event: "invoice.never" } });
  return { got };
});

const ended = new Set(["succeeded", "failed", "canceled", "timed_out"]);

async function submit(stack: Stack, type: string) {
  const r = await stack.api("/v1/tasks", { body: { type, input: {} } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.task_id as string;
}
const waitingStep = (stack: Stack, id: string, stepId: string) =>
  waitFor(
    async () => {
      const t = (await stack.api(`/v1/tasks/${id}`)).body;
      return t.steps.find((s: { id: string; status: string }) => s.id === stepId && s.status === "waiting");
    },
    10_000,
    `step ${stepId} of ${id} to wait`,
  );
const end = (stack: Stack, id: string) =>
  waitFor(
    async () => {
      const t = (await stack.api(`/v1/tasks/${id}`)).body;
      return ended.has(t.status) ? t : null;
    },
    15_000,
    `task ${id} to end`,
  );

describe("every wait has a durable deadline", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({
      defaultTimeoutMs: 600,
      providers: [silent],
      taskTypes: [silentJob, unheardEvent],
    });
  });
  after(() => stack.close());

  test("a job step without a timeout gets the configured default deadline and times the task out", async () => {
    const before = Date.now();
    const id = await submit(stack, "test.silent-job");
    const step = await waitingStep(stack, id, "work");
    assert.ok(step.deadline, "the waiting job step shows its deadline");
    const deadline = Date.parse(step.deadline);
    assert.ok(deadline >= before + 600 && deadline <= Date.now() + 600, `deadline ${step.deadline}`);
    const t = await end(stack, id);
    assert.equal(t.status, "timed_out");
    assert.equal(t.error.code, "JOB_TIMED_OUT");
  });

  test("an event wait without a timeout gets the configured default deadline and resolves to null", async () => {
    const id = await submit(stack, "test.unheard-event");
    const step = await waitingStep(stack, id, "paid");
    assert.ok(step.deadline, "the waiting event step shows its deadline");
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded");
    assert.deepEqual(t.output, { got: null });
  });
});

describe("the default wait deadline", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ providers: [silent], taskTypes: [silentJob, unheardEvent] });
  });
  after(() => stack.close());

  test("is 7 days when nothing is configured, for jobs and event waits alike", async () => {
    const week = 7 * 24 * 3_600_000;
    for (const [type, stepId] of [
      ["test.silent-job", "work"],
      ["test.unheard-event", "paid"],
    ] as const) {
      const before = Date.now();
      const id = await submit(stack, type);
      const step = await waitingStep(stack, id, stepId);
      const deadline = Date.parse(step.deadline);
      assert.ok(deadline >= before + week && deadline <= Date.now() + week, `${type}: ${step.deadline}`);
      await stack.api(`/v1/tasks/${id}/cancel`, { body: {} });
    }
  });

  test("the config key waits.default_timeout_s sets it, in seconds, and must be positive", () => {
    assert.equal(engineOptions({ waits: { default_timeout_s: 90 } }).defaultTimeoutMs, 90_000);
    assert.equal(engineOptions({}).defaultTimeoutMs, undefined);
    assert.throws(
      () => checkConfig({ waits: { default_timeout_s: 0 } }),
      (e: unknown) => e instanceof LonghaulError && e.code === "CONFIG_INVALID",
    );
  });
});
