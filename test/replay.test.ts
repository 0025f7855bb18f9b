import assert from "node:assert/strict";
import { test } from "node:test";
import { NonRetriableError, RetryAfterError } from "../src/core/errors.ts";
import { type RunOutcome, type RunTaskArgs, runTask, type StoredStep } from "../src/core/replay.ts";
import type { TaskFunction } from "../src/core/task-type.ts";
import type { WaitRequest } from "../src/core/wait.ts";

/** Runs `fn` with an in-memory history that stores outcomes and waits the way the engine does. */
function harness(fn: TaskFunction, history: StoredStep[] = []) {
  const stored = [...history];
  const registered: WaitRequest[] = [];
  const handoffs: string[] = [];
  const row = (
    o: Partial<StoredStep> & Pick<StoredStep, "stepId" | "position" | "kind" | "status">,
  ): StoredStep => ({
    output: null,
    error: null,
    attempts: 1,
    deadlineAt: null,
    handedOff: false,
    ...o,
  });
  const run = (extra: Partial<RunTaskArgs> = {}) =>
    runTask({
      fn,
      input: { n: 1 },
      ctx: { taskId: "t_1", tenantId: "tn_1", type: "x", userId: null, traceId: null },
      history: stored,
      ports: {
        storeRunOutcome: async (o: RunOutcome) => {
          const i = stored.findIndex((s) => s.stepId === o.stepId);
          const r = row({
            stepId: o.stepId,
            position: o.position,
            kind: "run",
            status: o.status,
            output: o.status === "succeeded" ? o.output : null,
            error: o.status === "succeeded" ? null : o.error,
            attempts: o.attempts,
          });
          if (i >= 0) stored[i] = r;
          else stored.push(r);
        },
        registerWait: async (w) => {
          registered.push(w);
          const r = row({
            stepId: w.stepId,
            position: w.position,
            kind: w.kind,
            status: "waiting",
            deadlineAt: w.timeoutMs,
          });
          stored.push(r);
          return r;
        },
        callbackUrl: (s) => `https://example.test/v1/callbacks/${s.stepId}.${s.attempts}`,
        markHandedOff: async (stepId) => {
          stored.find((s) => s.stepId === stepId)!.handedOff = true;
        },
      },
      maxAttempts: 3,
      advanceAttempt: 1,
      random: () => 0.5,
      ...extra,
    });
  /** Ends a waiting step, as an applied webhook or callback would. */
  const end = (stepId: string, output: unknown) => {
    const s = stored.find((x) => x.stepId === stepId)!;
    s.status = "succeeded";
    s.output = output;
  };
  return { run, stored, end, registered, handoffs };
}

test("replay never re-runs a completed step: the counter stays at 1", async () => {
  let count = 0;
  const h = harness(async (_input, step) => {
    const a = await step.run("count", () => ++count);
    const job = await step.job<{ text: string }>("wait", { provider: "sim", input: {} });
    return { a, job };
  });
  const first = await h.run();
  assert.equal(first.kind, "suspended");
  assert.equal(count, 1);
  assert.deepEqual(
    h.registered.map((w) => [w.kind, w.stepId]),
    [["job", "wait"]],
  );
  // Replayed while still waiting: suspends again, registers nothing new, runs nothing.
  const second = await h.run();
  assert.deepEqual(second, { kind: "suspended" });
  assert.equal(h.registered.length, 1);
  h.end("wait", { text: "done" });
  const third = await h.run();
  assert.deepEqual(third, { kind: "succeeded", output: { a: 1, job: { text: "done" } } });
  assert.equal(count, 1);
});

test("steps that come back in a different order fail with STEP_ORDER_MISMATCH", async () => {
  let flip = false;
  const h = harness(async (_input, step) => {
    const ids = flip ? ["b", "a"] : ["a", "b"];
    for (const id of ids) await step.run(id, () => id);
    return await step.job("end", { provider: "sim", input: {} });
  });
  assert.equal((await h.run()).kind, "suspended");
  flip = true;
  const r = await h.run();
  assert.equal(r.kind, "failed");
  assert.equal(r.kind === "failed" && r.error.code, "STEP_ORDER_MISMATCH");
});

test("a step id used twice fails with STEP_ID_DUPLICATE", async () => {
  const h = harness(async (_input, step) => {
    await step.run("x", () => 1);
    await step.run("x", () => 2);
  });
  const r = await h.run();
  assert.equal(r.kind === "failed" && r.error.code, "STEP_ID_DUPLICATE");
});

test("parallel jobs suspend together and resume when all have ended", async () => {
  const h = harness(async (_input, step) => {
    const [a, b] = await Promise.all([
      step.job("a", { provider: "sim", input: 1, timeout: "5m" }),
      step.job("b", { provider: "sim", input: 2 }),
    ]);
    return [a, b];
  });
  const r = await h.run();
  assert.equal(r.kind, "suspended");
  assert.deepEqual(
    h.registered.map((w) => [w.stepId, w.position, w.timeoutMs]),
    [
      ["a", 0, 300_000],
      // No timeout of its own: the default deadline, 7 days.
      ["b", 1, 7 * 24 * 3_600_000],
    ],
  );
  h.end("a", "A");
  assert.deepEqual(await h.run(), { kind: "suspended" });
  h.end("b", "B");
  assert.deepEqual(await h.run(), { kind: "succeeded", output: ["A", "B"] });
});

test("a failing step.run is retried with backoff, then its failure reaches the task code", async () => {
  let attempts = 0;
  const h = harness(async (_input, step) => {
    try {
      await step.run("flaky", () => {
        attempts++;
        throw new Error("upstream 503");
      });
    } catch (err) {
      return { caught: (err as Error).message };
    }
  });
  const r1 = await h.run();
  assert.equal(r1.kind, "retry");
  assert.equal(r1.kind === "retry" && r1.delayMs, 750);
  assert.equal((await h.run()).kind, "retry");
  assert.deepEqual(await h.run(), { kind: "succeeded", output: { caught: "upstream 503" } });
  assert.equal(attempts, 3);
  // Replayed again: the stored failure is thrown without running the step a fourth time.
  assert.deepEqual(await h.run(), { kind: "succeeded", output: { caught: "upstream 503" } });
  assert.equal(attempts, 3);
});

test("NonRetriableError fails the step at once; RetryAfterError sets the delay", async () => {
  const h1 = harness(async (_input, step) => {
    await step.run("no", () => {
      throw new NonRetriableError("bad input");
    });
  });
  const r1 = await h1.run();
  assert.equal(r1.kind, "failed");
  assert.equal(r1.kind === "failed" && r1.error.message, "bad input");

  const h2 = harness(async (_input, step) => {
    await step.run("later", () => {
      throw new RetryAfterError("rate limited", 12_345);
    });
  });
  const r2 = await h2.run();
  assert.equal(r2.kind === "retry" && r2.delayMs, 12_345);
});

test("an error thrown outside any step retries the advance, then fails the task", async () => {
  const h = harness(async () => {
    throw new Error("oops");
  });
  assert.equal((await h.run({ advanceAttempt: 1 })).kind, "retry");
  const last = await h.run({ advanceAttempt: 3 });
  assert.equal(last.kind === "failed" && last.error.message, "oops");
});

test("step.run work in flight finishes before the run suspends", async () => {
  const h = harness(async (_input, step) => {
    await Promise.all([
      step.job("j", { provider: "sim", input: null }),
      step.run("slow", async () => {
        await new Promise((r) => setTimeout(r, 30));
        return "ok";
      }),
    ]);
  });
  const r = await h.run();
  assert.equal(r.kind, "suspended");
  assert.equal(h.stored.find((s) => s.stepId === "slow")?.status, "succeeded");
});

test("a callback URL is handed off once, after its wait is stored, and replay does not hand it off again", async () => {
  const sent: string[] = [];
  const h = harness(async (_input, step) => {
    const result = await step.callback<{ pages: number }>("ocr", { timeout: "10m" }, (url) => {
      sent.push(url);
    });
    return result;
  });
  assert.equal((await h.run()).kind, "suspended");
  assert.deepEqual(sent, ["https://example.test/v1/callbacks/ocr.1"]);
  assert.equal(h.registered[0]?.kind, "callback");
  assert.equal(h.stored[0]?.handedOff, true);
  assert.equal((await h.run()).kind, "suspended");
  assert.equal(sent.length, 1);
  h.end("ocr", { pages: 200 });
  assert.deepEqual(await h.run(), { kind: "succeeded", output: { pages: 200 } });
});

test("a handoff that failed before it finished is retried with the same URL", async () => {
  const sent: string[] = [];
  let fail = true;
  const h = harness(async (_input, step) =>
    step.callback("cb", {}, (url) => {
      sent.push(url);
      if (fail) throw new Error("service down");
    }),
  );
  assert.equal((await h.run()).kind, "retry");
  fail = false;
  assert.equal((await h.run()).kind, "suspended");
  assert.equal(sent.length, 2);
  assert.equal(sent[0], sent[1]);
});

test("an uncaught step timeout ends the task as timed_out", async () => {
  const h = harness(async (_input, step) => step.approval("ok", { timeout: "1h" }));
  assert.equal((await h.run()).kind, "suspended");
  const s = h.stored[0]!;
  s.status = "timed_out";
  s.error = { code: "STEP_TIMED_OUT", message: "no decision" };
  const r = await h.run();
  assert.equal(r.kind, "timed_out");
});

test("without strict order, parallel branches may reach new steps in any order", async () => {
  let flip = false;
  const h = harness(async (_input, step) => {
    const ids = flip ? ["b", "a"] : ["a", "b"];
    for (const id of ids) await step.run(id, () => id);
    return await step.sleep("end", 1000);
  });
  assert.equal((await h.run({ strictOrder: false })).kind, "suspended");
  flip = true;
  assert.equal((await h.run({ strictOrder: false })).kind, "suspended");
  const strict = await h.run();
  assert.equal(strict.kind === "failed" && strict.error.code, "STEP_ORDER_MISMATCH");
});
