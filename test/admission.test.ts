import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { throttleDelayMs } from "../src/core/backoff.ts";
import { ManualClock } from "../src/core/clock.ts";
import { defineTask } from "../src/core/task-type.ts";
import { providersFromConfig } from "../src/providers/from-config.ts";
import { jsonClient, parseRetryAfter } from "../src/providers/json-client.ts";
import { type Provider, ProviderError } from "../src/providers/provider.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Lease, Store, WorkItem } from "../src/store/store.ts";
import { dispatchJob } from "../src/usecases/dispatch-job.ts";
import { tempDir, waitFor } from "./helpers.ts";
import { pgAvailableOrReport, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";
import { type Stack, startStack } from "./stack.ts";

const T0 = Date.UTC(2026, 0, 1);
const leaseOf = (item: WorkItem, owner = "w"): Lease => ({ itemId: item.id, owner });

/** A 429 (or any answer) from a stubbed fetch, through the adapters' one HTTP client. */
async function answer(status: number, body: unknown, headers: Record<string, string> = {}) {
  const request = jsonClient({
    name: "p",
    baseUrl: "http://provider.invalid",
    timeoutMs: 1000,
    now: () => T0,
    fetchImpl: async () => new Response(JSON.stringify(body), { status, headers }),
  });
  try {
    await request("create the job", "POST", "/jobs", { body: {} });
  } catch (err) {
    assert.ok(err instanceof ProviderError);
    return err;
  }
  assert.fail("the request did not fail");
}

describe("a provider's rate limit, as the JSON client reads it", () => {
  test("Retry-After is delay-seconds or an HTTP-date", () => {
    assert.equal(parseRetryAfter("7", T0), 7000);
    assert.equal(parseRetryAfter(new Date(T0 + 12_000).toUTCString(), T0), 12_000);
    assert.equal(parseRetryAfter(new Date(T0 - 5000).toUTCString(), T0), 0);
    assert.equal(parseRetryAfter("soon", T0), undefined);
    assert.equal(parseRetryAfter(null, T0), undefined);
  });

  test("OpenAI's rate_limit_exceeded and Gemini's RESOURCE_EXHAUSTED are throttled; insufficient_quota is final", async () => {
    const openai = await answer(
      429,
      { error: { code: "rate_limit_exceeded", message: "slow down" } },
      { "retry-after": "7" },
    );
    assert.equal(openai.throttled, true);
    assert.equal(openai.retriable, true);
    assert.equal(openai.retryAfterMs, 7000);
    const gemini = await answer(429, {
      error: { code: 429, status: "RESOURCE_EXHAUSTED", message: "quota" },
    });
    assert.equal(gemini.throttled, true);
    assert.equal(gemini.retryAfterMs, undefined);
    const billing = await answer(429, { error: { code: "insufficient_quota", message: "no credit" } });
    assert.equal(billing.throttled, false);
    assert.equal(billing.retriable, false);
    assert.match(billing.message, /billing/);
    const busy = await answer(503, { error: "busy" }, { "retry-after": "3" });
    assert.equal(busy.throttled, false);
    assert.equal(busy.retriable, true);
    assert.equal(busy.retryAfterMs, 3000);
  });

  test("the wait honours Retry-After, else grows exponentially with full jitter from the injected random", () => {
    assert.equal(throttleDelayMs(1, 7000, { random: () => 0 }), 7000);
    assert.equal(throttleDelayMs(1, 7000, { random: () => 0.5 }), 7350);
    assert.equal(throttleDelayMs(1, undefined, { random: () => 1 }), 1000);
    assert.equal(throttleDelayMs(4, undefined, { random: () => 1 }), 8000);
    assert.equal(throttleDelayMs(4, undefined, { random: () => 0.25 }), 2000);
    assert.equal(throttleDelayMs(40, undefined, { random: () => 1 }), 300_000);
  });

  test("enqueued_tokens in a provider's config is a budget per model; a bad one is CONFIG_INVALID", () => {
    const [p] = providersFromConfig({
      sim: { base_url: "http://127.0.0.1:1", enqueued_tokens: { "gpt-4o-mini": 2_000_000 } },
    });
    assert.deepEqual(p?.enqueuedTokens, { "gpt-4o-mini": 2_000_000 });
    assert.throws(
      () => providersFromConfig({ sim: { base_url: "http://127.0.0.1:1", enqueued_tokens: { m: -1 } } }),
      /enqueued_tokens/,
    );
  });
});

/** A job registered for a task and its dispatch item, claimed: what a worker would hold. */
async function jobToDispatch(store: Store, tenantId: string, maxTokens: number | null, model = "m") {
  const { task } = await store.submitTask({
    tenantId,
    type: "demo.echo",
    input: { text: "hi" },
    clientRequestId: null,
    userId: null,
    traceId: null,
  });
  const [adv] = await store.claim("w", 1, 60_000);
  assert.equal(adv?.kind, "advance");
  assert.equal(await store.beginAdvance(leaseOf(adv!), task.id), "started");
  await store.registerWait(leaseOf(adv!), task.id, {
    kind: "job",
    stepId: "llm",
    position: 0,
    provider: "p",
    input: { model, text: "hi" },
    timeoutMs: null,
    pollAfterMs: null,
    cancelOnTimeout: true,
    ...(maxTokens === null ? {} : { maxTokens }),
  });
  await store.finishAdvance(leaseOf(adv!), task.id, { kind: "suspended" });
  const [d] = await store.claim("w", 1, 60_000);
  assert.equal(d?.kind, "dispatch");
  return { task, item: d!, jobId: String(d!.payload.jobId) };
}

describe("a 429 at create parks the job without spending its attempts", () => {
  const tmp = tempDir();
  const clock = new ManualClock(T0);
  let store: SqliteStore;
  before(async () => {
    store = new SqliteStore({ path: join(tmp.dir, "admission.db"), clock });
    await store.migrate();
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });

  test("with Retry-After: 7 it waits 7 s on the injected clock, 20 times over, then is created", async () => {
    const tenant = await store.createTenant({ name: "t", keyHash: "hash-429" });
    const throttles = 20;
    let calls = 0;
    const provider: Provider = {
      name: "p",
      parseEvent: () => assert.fail("no events here"),
      async create() {
        calls++;
        if (calls <= throttles) {
          throw new ProviderError("p: could not create the job: HTTP 429 rate_limit_exceeded", {
            retriable: true,
            status: 429,
            throttled: true,
            retryAfterMs: 7000,
          });
        }
        return { jobId: "ext-1", status: "created" };
      },
    };
    const deps = {
      store,
      clock,
      providers: { find: () => provider },
      webhookUrlFor: () => "http://127.0.0.1:1/hooks/p",
      random: () => 0,
    };
    const { jobId, task, item: first } = await jobToDispatch(store, tenant.id, null);
    let item = first;
    const maxAttempts = item.maxAttempts;
    assert.ok(throttles > maxAttempts, "more 429s than the dispatch has attempts");
    for (let i = 1; i <= throttles; i++) {
      const r = await dispatchJob(deps, {
        jobId,
        lease: leaseOf(item),
        attempts: item.attempts,
        maxAttempts,
      });
      assert.equal(r.kind, "throttled");
      assert.equal(r.kind === "throttled" && r.retryAt, clock.now() + 7000);
      const job = await store.getJob(jobId);
      assert.equal(job?.status, "pending", "parked, never failed");
      assert.equal(job?.throttles, i);
      clock.advance(6999);
      assert.deepEqual(await store.claim("w", 1, 60_000), [], "not before the provider's Retry-After");
      clock.advance(2);
      const [again] = await store.claim("w", 1, 60_000);
      assert.equal(again?.kind, "dispatch");
      assert.equal(again!.attempts, 1, "a 429 counts no attempt");
      item = again!;
    }
    const created = await dispatchJob(deps, {
      jobId,
      lease: leaseOf(item),
      attempts: item.attempts,
      maxAttempts,
    });
    assert.deepEqual(created, { kind: "created", externalId: "ext-1" });
    assert.equal((await store.getJob(jobId))?.status, "created");
    const events = await store.taskEvents(tenant.id, 0, 100, task.id);
    const parked = events.filter((e) => e.type === "job.throttled");
    assert.equal(parked.length, throttles);
    const last = parked.at(-1)!.data as Record<string, unknown>;
    assert.equal(last.throttles, throttles);
    assert.match(String(last.last_error), /429/);
    assert.equal(typeof last.retry_at, "string");
  });
});

const ended = (s: string) => ["succeeded", "failed", "canceled", "timed_out"].includes(s);
const taskOf = async (stack: Stack, id: string) => (await stack.api(`/v1/tasks/${id}`)).body;

describe("under the simulator's chaos: 429 at create with Retry-After", () => {
  let offsetMs = 0;
  const clock = { now: () => Date.now() + offsetMs };
  let stack: Stack;
  before(async () => {
    stack = await startStack({ clock, chaos: { throttleFirstCreates: 2, retryAfterS: 7 } });
  });
  after(() => stack.close());

  test("the job is parked while the injected clock is short of 7 s, retried past it, and the task succeeds", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "later" } } });
    assert.equal(r.status, 202);
    const id = r.body.task_id as string;
    const throttled = async (n: number) =>
      waitFor(
        async () => {
          const events = await stack.store.taskEvents(stack.tenantId, 0, 100, id);
          return events.filter((e) => e.type === "job.throttled").length >= n ? events : null;
        },
        15_000,
        `throttle ${n}`,
      );
    await throttled(1);
    const parked = await taskOf(stack, id);
    assert.ok(!ended(parked.status), "a 429 never fails the task");
    offsetMs += 8000;
    await throttled(2);
    offsetMs += 8000;
    const done = await waitFor(
      async () => {
        const t = await taskOf(stack, id);
        return ended(t.status) ? t : null;
      },
      15_000,
      "the task to end",
    );
    assert.equal(done.status, "succeeded");
    assert.deepEqual(done.output, { text: "later" });
    assert.equal(stack.sim.stats().throttledCreates, 2);
  });
});

describe("a provider's enqueued-token budget", () => {
  let stack: Stack;
  const budgeted = defineTask<{ text: string }, unknown>("test.budgeted", async (input, step) =>
    step.job("llm", {
      provider: "sim",
      input: { model: "m", instruction: "echo", text: input.text, delay_ms: 300 },
      maxTokens: 60,
    }),
  );
  before(async () => {
    stack = await startStack({ taskTypes: [budgeted], simEnqueuedTokens: { m: 100 } });
  });
  after(() => stack.close());

  test("two jobs each declaring 60% of it: the second waits until the first ends, then runs", async () => {
    const ids: string[] = [];
    for (const text of ["one", "two"]) {
      const r = await stack.api("/v1/tasks", { body: { type: "test.budgeted", input: { text } } });
      assert.equal(r.status, 202);
      ids.push(r.body.task_id as string);
    }
    for (const id of ids) {
      const t = await waitFor(
        async () => {
          const x = await taskOf(stack, id);
          return ended(x.status) ? x : null;
        },
        15_000,
        `task ${id}`,
      );
      assert.equal(t.status, "succeeded");
    }
    const events = await stack.store.taskEvents(stack.tenantId, 0, 1000);
    const parked = events.filter((e) => e.type === "job.parked");
    assert.equal(parked.length, 1, "exactly one job waited for room");
    const waiter = parked[0]!.taskId;
    const first = ids.find((id) => id !== waiter)!;
    const seqOf = (taskId: string, type: string) =>
      events.find((e) => e.taskId === taskId && e.type === type)!.seq;
    assert.ok(
      seqOf(waiter, "job.created") > seqOf(first, "step.succeeded"),
      "the waiter is created only after the first job ended",
    );
    assert.match(String((parked[0]!.data as { reason: string }).reason), /enqueued-token budget/);
  });
});

const unreachable = await pgUnreachable();
if (pgAvailableOrReport(unreachable, "provider admission on PostgreSQL")) {
  const { fresh } = pgTestSchemas();
  test("two workers on PostgreSQL admitting at once never over-admit a provider's budget", async () => {
    const schema = fresh();
    const clock = new ManualClock(T0);
    const a = new PostgresStore({ url: pgUrl(schema), clock });
    const b = new PostgresStore({ url: pgUrl(schema), clock });
    try {
      await Promise.all([a.migrate(), b.migrate()]);
      const tenant = await a.createTenant({ name: "race", keyHash: `hash-${schema}` });
      for (let round = 0; round < 10; round++) {
        const model = `m${round}`;
        const one = await jobToDispatch(a, tenant.id, 60, model);
        const two = await jobToDispatch(a, tenant.id, 60, model);
        const budget = { model, maxTokens: 100 };
        const answers = await Promise.all([
          a.acquireJobSlot(leaseOf(one.item), one.jobId, budget),
          b.acquireJobSlot(leaseOf(two.item), two.jobId, budget),
        ]);
        assert.deepEqual(answers.sort(), ["ok", "parked"], `round ${round}`);
        for (const d of [one.item, two.item]) await a.complete(leaseOf(d)).catch(() => {});
        // Drain the parked item so the next round claims its own two.
        clock.advance(10_000);
        for (const d of await a.claim("w", 10, 60_000)) await a.complete(leaseOf(d));
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
}
