import assert from "node:assert/strict";
import { test } from "node:test";
import { LonghaulError } from "../src/core/errors.ts";
import { declaredMaxTokens, periodStart, secondsUntilNextPeriod, validateQuotas } from "../src/core/quota.ts";
import { runTask } from "../src/core/replay.ts";
import type { WaitRequest } from "../src/core/wait.ts";

test("a budget period starts at midnight UTC or on the 1st of the month, the month by default", () => {
  const t = Date.UTC(2026, 1, 27, 23, 59, 30); // 2026-02-27T23:59:30Z
  assert.equal(periodStart(t, "day"), "2026-02-27");
  assert.equal(periodStart(t, "month"), "2026-02-01");
  assert.equal(periodStart(t, undefined), "2026-02-01");
  assert.equal(secondsUntilNextPeriod(t, "day"), 30);
  assert.equal(secondsUntilNextPeriod(t, "month"), 30 + 86_400);
  assert.equal(secondsUntilNextPeriod(Date.UTC(2026, 11, 31, 12), "month"), 12 * 3600);
});

test("budget_period is day or month; anything else is VALIDATION_FAILED", () => {
  assert.deepEqual(validateQuotas({ token_budget: 5, budget_period: "day" }), {
    token_budget: 5,
    budget_period: "day",
  });
  assert.throws(
    () => validateQuotas({ budget_period: "year" }),
    (e: unknown) => e instanceof LonghaulError && e.code === "VALIDATION_FAILED",
  );
});

test("a job's max tokens: the step's maxTokens, else the input's max_tokens or max_output_tokens", () => {
  assert.equal(declaredMaxTokens(500, { max_tokens: 9 }), 500);
  assert.equal(declaredMaxTokens(undefined, { max_tokens: 9 }), 9);
  assert.equal(declaredMaxTokens(undefined, { max_output_tokens: 7 }), 7);
  assert.equal(declaredMaxTokens(undefined, { max_tokens: "9" }), null);
  assert.equal(declaredMaxTokens(undefined, "text"), null);
});

async function registered(maxTokens: unknown, input: unknown) {
  const waits: WaitRequest[] = [];
  const r = await runTask({
    fn: async (_i, step) =>
      step.job("llm", { provider: "sim", input, ...(maxTokens === undefined ? {} : { maxTokens }) } as never),
    input: null,
    ctx: { taskId: "t_1", tenantId: "tn_1", type: "x", userId: null, traceId: null },
    history: [],
    ports: {
      storeRunOutcome: async () => {},
      registerWait: async (w) => {
        waits.push(w);
        return {
          stepId: w.stepId,
          position: w.position,
          kind: w.kind,
          status: "waiting",
          output: null,
          error: null,
          attempts: 1,
          deadlineAt: null,
          handedOff: false,
        };
      },
      callbackUrl: () => "",
      markHandedOff: async () => {},
    },
    maxAttempts: 3,
    advanceAttempt: 1,
  });
  return { r, wait: waits[0] };
}

test("step.job passes its declared max tokens to the wait, and refuses a bad maxTokens", async () => {
  const explicit = await registered(800, { prompt: "x", max_tokens: 10 });
  assert.equal(explicit.wait?.kind === "job" && explicit.wait.maxTokens, 800);
  const fromInput = await registered(undefined, { prompt: "x", max_output_tokens: 64 });
  assert.equal(fromInput.wait?.kind === "job" && fromInput.wait.maxTokens, 64);
  const bad = await registered(-1, {});
  assert.equal(bad.r.kind === "failed" && bad.r.error.code, "VALIDATION_FAILED");
  assert.equal(bad.wait, undefined);
});
