import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { defineTask } from "../src/core/task-type.ts";
import { sleep, tempDir, waitFor } from "./helpers.ts";
import { CLI_FROM_SOURCE } from "./processes.ts";
import { type Stack, startStack } from "./stack.ts";

const ADMIN = "admin-key-for-tenant-tests-0123456789";
const ended = new Set(["succeeded", "failed", "canceled", "timed_out"]);

/** One simulator job that declares, in its input, that it uses at most 60 tokens. */
const capped = defineTask("test.capped", async (input: { text: string; delay_ms: number }, step) =>
  step.job("llm", {
    provider: "sim",
    input: { instruction: "echo", text: input.text, delay_ms: input.delay_ms, max_tokens: 60 },
  }),
);

async function call(
  stack: Stack,
  path: string,
  init: { method?: string; key: string; body?: unknown },
): Promise<{ status: number; body: any; headers: Headers }> {
  const r = await fetch(stack.url + path, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: {
      authorization: `Bearer ${init.key}`,
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null, headers: r.headers };
}

async function newTenant(stack: Stack, name: string, quotas: Record<string, unknown> = {}) {
  const r = await call(stack, "/v1/admin/tenants", { key: ADMIN, body: { name, quotas } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return { id: r.body.tenant_id as string, key: r.body.api_key as string };
}

const submit = (stack: Stack, key: string, input: unknown, extra: Record<string, unknown> = {}) =>
  call(stack, "/v1/tasks", { key, body: { type: "demo.echo", input, ...extra } });

const taskOf = async (stack: Stack, key: string, id: string) =>
  (await call(stack, `/v1/tasks/${id}`, { key })).body;

describe("tenants", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ adminKey: ADMIN, concurrency: 32, taskTypes: [capped] });
  });
  after(() => stack.close());

  test("an admin creates a tenant whose key is shown once, lists, reads, updates, rotates and revokes keys", async () => {
    const created = await call(stack, "/v1/admin/tenants", {
      key: ADMIN,
      body: { name: "acme", quotas: { tasks_per_day: 100 } },
    });
    assert.equal(created.status, 201);
    assert.match(created.body.api_key, /^lh_/);
    const id = created.body.tenant_id;
    assert.equal((await submit(stack, created.body.api_key, { text: "hi" })).status, 202);

    const listed = await call(stack, "/v1/admin/tenants", { key: ADMIN });
    assert.ok(listed.body.data.some((t: { tenant_id: string }) => t.tenant_id === id));
    const read = await call(stack, `/v1/admin/tenants/${id}`, { key: ADMIN });
    assert.equal(read.body.keys.length, 1);
    assert.equal(read.body.keys[0].hint, `…${created.body.api_key.slice(-4)}`);
    assert.ok(!JSON.stringify(read.body).includes(created.body.api_key), "the key is never shown again");

    const patched = await call(stack, `/v1/admin/tenants/${id}`, {
      key: ADMIN,
      method: "PATCH",
      body: { quotas: { tasks_per_day: 5, max_concurrent_jobs: 3 } },
    });
    assert.deepEqual(patched.body.quotas, { tasks_per_day: 5, max_concurrent_jobs: 3 });

    const rotated = await call(stack, `/v1/admin/tenants/${id}/keys`, { key: ADMIN, body: {} });
    assert.equal(rotated.status, 201);
    assert.equal((await call(stack, "/v1/tasks", { key: rotated.body.api_key })).status, 200);
    assert.equal(
      (await call(stack, "/v1/tasks", { key: created.body.api_key })).status,
      200,
      "old key works until revoked",
    );
    const oldKeyId = read.body.keys[0].key_id;
    const revoked = await call(stack, `/v1/admin/tenants/${id}/keys/${oldKeyId}`, {
      key: ADMIN,
      method: "DELETE",
    });
    assert.equal(revoked.status, 204);
    await sleep(5100); // the key cache lives 5 s
    assert.equal((await call(stack, "/v1/tasks", { key: created.body.api_key })).status, 401);
    assert.equal((await call(stack, "/v1/tasks", { key: rotated.body.api_key })).status, 200);

    const bad = await call(stack, "/v1/admin/tenants", {
      key: ADMIN,
      body: { name: "x", quotas: { max_concurrent_jobs: -1 } },
    });
    assert.equal(bad.status, 400);
    const unknown = await call(stack, "/v1/admin/tenants", {
      key: ADMIN,
      body: { name: "x", quotas: { speed: 1 } },
    });
    assert.equal(unknown.status, 400);
    assert.equal((await call(stack, "/v1/admin/tenants/tn_nope", { key: ADMIN })).status, 404);
    assert.equal((await call(stack, "/v1/admin/tenants", { key: stack.key })).status, 401);
  });

  test("every tenant-facing endpoint answers 404 for another tenant's ids", async () => {
    const a = await newTenant(stack, "a");
    const b = await newTenant(stack, "b");
    const task = await call(stack, "/v1/tasks", { key: a.key, body: { type: "demo.callback", input: {} } });
    const id = task.body.task_id;
    const endpoint = await call(stack, "/v1/webhook-endpoints", {
      key: a.key,
      body: { url: "https://hooks.example.com/x" },
    });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    const ep = endpoint.body.id;
    for (const [method, path] of [
      ["GET", `/v1/tasks/${id}`],
      ["POST", `/v1/tasks/${id}/cancel`],
      ["GET", `/v1/tasks/${id}/timeline`],
      ["GET", `/v1/tasks/${id}/input`],
      ["GET", `/v1/tasks/${id}/output`],
      ["GET", `/v1/tasks/${id}/steps/cb/output`],
      ["GET", `/v1/events?task_id=${id}`],
      ["GET", `/v1/webhook-endpoints/${ep}`],
      ["GET", `/v1/webhook-endpoints/${ep}/deliveries`],
      ["POST", `/v1/webhook-endpoints/${ep}/deliveries/dl_x/replay`],
      ["DELETE", `/v1/webhook-endpoints/${ep}`],
    ] as const) {
      const r = await call(stack, path, { key: b.key, method, ...(method === "POST" ? { body: {} } : {}) });
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.match(r.body.error.code, /NOT_FOUND$/);
    }
    assert.equal((await call(stack, "/v1/webhook-endpoints", { key: b.key })).body.data.length, 0);
    assert.equal(
      (await call(stack, `/v1/webhook-endpoints/${ep}`, { key: a.key })).status,
      200,
      "the owner still sees it",
    );
    const listed = await call(stack, "/v1/tasks?limit=200", { key: b.key });
    assert.equal(listed.body.data.length, 0);
    const usage = await call(stack, "/v1/usage", { key: b.key });
    assert.equal(usage.body.tenant_id, b.id);
    assert.equal(usage.body.tasks.waiting ?? 0, 0);
    // The same client_request_id is free per tenant.
    const ra = await submit(stack, a.key, { text: "x" }, { client_request_id: "shared" });
    const rb = await submit(stack, b.key, { text: "x" }, { client_request_id: "shared" });
    assert.equal(rb.status, 202);
    assert.notEqual(ra.body.task_id, rb.body.task_id);
  });

  test("the daily limit answers 429 with Retry-After and QUOTA_EXCEEDED", async () => {
    const t = await newTenant(stack, "daily", { tasks_per_day: 2 });
    assert.equal((await submit(stack, t.key, { text: "1" }, { client_request_id: "d1" })).status, 202);
    assert.equal((await submit(stack, t.key, { text: "2" })).status, 202);
    const third = await submit(stack, t.key, { text: "3" });
    assert.equal(third.status, 429);
    assert.equal(third.body.error.code, "QUOTA_EXCEEDED");
    const retryAfter = Number(third.headers.get("retry-after"));
    assert.ok(retryAfter >= 1 && retryAfter <= 86_400);
    // Retrying a submission already made is not a new task.
    assert.equal((await submit(stack, t.key, { text: "1" }, { client_request_id: "d1" })).status, 200);
  });

  test("the submit rate limit answers 429 RATE_LIMITED past its burst", async () => {
    const t = await newTenant(stack, "rate", { submit_rate_per_s: 1 });
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await submit(stack, t.key, { text: `${i}` }));
    const limited = results.find((r) => r.status === 429);
    assert.ok(limited, "a burst past twice the rate is refused");
    assert.equal(limited.body.error.code, "RATE_LIMITED");
    assert.ok(Number(limited.headers.get("retry-after")) >= 1);
  });

  test("over the token budget, reject refuses new work and usage shows the tokens", async () => {
    const t = await newTenant(stack, "budget-reject", { token_budget: 5, budget_policy: "reject" });
    const first = await submit(stack, t.key, { text: "one two three four five six" });
    await waitFor(async () => (await taskOf(stack, t.key, first.body.task_id)).status === "succeeded");
    const usage = await call(stack, "/v1/usage", { key: t.key });
    assert.ok(usage.body.tokens_used >= 6, JSON.stringify(usage.body));
    assert.ok(usage.body.days.at(-1).tokens >= 6);
    assert.equal(usage.body.tasks.succeeded, 1);
    const refused = await submit(stack, t.key, { text: "more" });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, "BUDGET_EXCEEDED");
    // The monthly budget resets on the 1st: Retry-After points there, at most 31 days away.
    const retryAfter = Number(refused.headers.get("retry-after"));
    assert.ok(retryAfter >= 1 && retryAfter <= 31 * 86_400, `retry-after ${retryAfter}`);
    assert.equal(usage.body.budget.tokens_used, usage.body.tokens_used, "all of it was used this month");
  });

  test("over the token budget, park keeps new work pending until the budget is raised", async () => {
    const t = await newTenant(stack, "budget-park", { token_budget: 5, budget_policy: "park" });
    const first = await submit(stack, t.key, { text: "one two three four five six" });
    await waitFor(async () => (await taskOf(stack, t.key, first.body.task_id)).status === "succeeded");
    const second = await submit(stack, t.key, { text: "parked" });
    assert.equal(second.status, 202);
    await sleep(400);
    assert.equal((await taskOf(stack, t.key, second.body.task_id)).status, "pending");
    await call(stack, `/v1/admin/tenants/${t.id}`, {
      key: ADMIN,
      method: "PATCH",
      body: { quotas: { token_budget: 1000 } },
    });
    await waitFor(async () => (await taskOf(stack, t.key, second.body.task_id)).status === "succeeded");
  });

  test("a job's declared max_tokens is held against the budget: a second job that would pass it waits until the first ends", async () => {
    const t = await newTenant(stack, "budget-hold", { token_budget: 100 });
    const jobOf = async (id: string) => (await taskOf(stack, t.key, id)).jobs[0];
    const slow = await call(stack, "/v1/tasks", {
      key: t.key,
      body: { type: "test.capped", input: { text: "one two", delay_ms: 5000 } },
    });
    await waitFor(async () => ["created", "running"].includes((await jobOf(slow.body.task_id))?.status));
    const quick = await call(stack, "/v1/tasks", {
      key: t.key,
      body: { type: "test.capped", input: { text: "three", delay_ms: 0 } },
    });
    await waitFor(async () => (await jobOf(quick.body.task_id))?.status === "pending");
    await sleep(300);
    const held = await call(stack, `/v1/admin/tenants/${t.id}/usage`, { key: ADMIN });
    assert.equal((await jobOf(quick.body.task_id)).status, "pending", "60 held + 60 more would pass 100");
    assert.ok(
      ["created", "running"].includes((await jobOf(slow.body.task_id)).status),
      "read after the second job was seen waiting: the first was still running then",
    );
    assert.deepEqual(
      { ...held.body.budget, period_start: undefined },
      { token_budget: 100, period: "month", period_start: undefined, tokens_used: 0, tokens_reserved: 60 },
    );
    assert.match(held.body.budget.period_start, /^\d{4}-\d{2}-01$/);
    await waitFor(
      async () => (await taskOf(stack, t.key, quick.body.task_id)).status === "succeeded",
      15_000,
    );
    const slowJob = await jobOf(slow.body.task_id);
    const quickJob = await jobOf(quick.body.task_id);
    assert.equal(slowJob.status, "succeeded");
    assert.ok(quickJob.job_id, "the second job was created at the provider once the first had ended");
    const done = await call(stack, `/v1/admin/tenants/${t.id}`, { key: ADMIN });
    const used = slowJob.usage.total_tokens + quickJob.usage.total_tokens;
    assert.equal(done.body.budget.tokens_used, used, "the holds are replaced by the actual usage");
    assert.equal(done.body.budget.tokens_reserved, 0);
  });

  test("budget_period must be day or month", async () => {
    const r = await call(stack, "/v1/admin/tenants", {
      key: ADMIN,
      body: { name: "bad-period", quotas: { token_budget: 10, budget_period: "week" } },
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, "VALIDATION_FAILED");
    assert.match(r.body.error.message, /budget_period/);
  });

  test("a failed job maps back to its tenant with its error in usage", async () => {
    const t = await newTenant(stack, "failing");
    const r = await submit(stack, t.key, { text: "x", fail: true });
    await waitFor(async () => (await taskOf(stack, t.key, r.body.task_id)).status === "failed");
    const usage = await call(stack, "/v1/usage", { key: t.key });
    assert.equal(usage.body.recent_job_failures.length, 1);
    assert.equal(usage.body.recent_job_failures[0].task_id, r.body.task_id);
    assert.equal(usage.body.recent_job_failures[0].error.code, "model_error");
    assert.equal(usage.body.days.at(-1).jobs_failed, 1);
    const admin = await call(stack, `/v1/admin/tenants/${t.id}/usage`, { key: ADMIN });
    assert.equal(admin.body.tasks.failed, 1);
  });

  test("user_id and trace_id are stored and filter the task list", async () => {
    const t = await newTenant(stack, "tracing");
    await submit(stack, t.key, { text: "a" }, { user_id: "u-1", trace_id: "tr-1" });
    await submit(stack, t.key, { text: "b" }, { user_id: "u-2", trace_id: "tr-2" });
    const byUser = await call(stack, "/v1/tasks?user_id=u-1", { key: t.key });
    assert.deepEqual(
      byUser.body.data.map((x: { user_id: string; trace_id: string }) => [x.user_id, x.trace_id]),
      [["u-1", "tr-1"]],
    );
    const byTrace = await call(stack, "/v1/tasks?trace_id=tr-2", { key: t.key });
    assert.equal(byTrace.body.data.length, 1);
  });
});

describe("concurrency and fairness", () => {
  test("with max_concurrent_jobs 2 there are never more than 2 external jobs at once, and the rest wait as pending", async () => {
    const stack = await startStack({ adminKey: ADMIN, concurrency: 32 });
    try {
      const t = await newTenant(stack, "limited", { max_concurrent_jobs: 2 });
      const ids: string[] = [];
      for (let i = 0; i < 8; i++)
        ids.push((await submit(stack, t.key, { text: `j${i}`, delay_ms: 250 })).body.task_id);
      let maxRunning = 0;
      const jobIds = () =>
        (
          stack.store.db
            .prepare("SELECT external_id FROM jobs WHERE tenant_id = ? AND external_id IS NOT NULL")
            .all(t.id) as {
            external_id: string;
          }[]
        ).map((r) => r.external_id);
      for (;;) {
        // Ask the provider, not our own books, how many of this tenant's jobs are live.
        const states = await Promise.all(
          jobIds().map(
            async (j) =>
              ((await (await fetch(`${stack.sim.url}/v1/jobs/${j}`)).json()) as { status: string }).status,
          ),
        );
        maxRunning = Math.max(maxRunning, states.filter((s) => s === "queued" || s === "running").length);
        const tasks = await Promise.all(ids.map((id) => taskOf(stack, t.key, id)));
        if (tasks.every((x) => ended.has(x.status))) break;
        await sleep(15);
      }
      assert.ok(maxRunning <= 2, `at most 2 jobs at once, saw ${maxRunning}`);
      assert.equal(maxRunning, 2, "the limit is used, not just respected");
      // Read from the log rather than polled, so a slow machine cannot hide it: a task that was
      // submitted at the start began running only after another task's job step had ended.
      const startedAfterASlotFreed = stack.store.db
        .prepare(
          `SELECT count(*) AS n FROM task_events r WHERE r.tenant_id = ? AND r.type = 'task.running'
             AND r.seq = (SELECT min(seq) FROM task_events WHERE task_id = r.task_id AND type = 'task.running')
             AND r.seq > (SELECT min(seq) FROM task_events WHERE tenant_id = ? AND type = 'step.succeeded')`,
        )
        .get(t.id, t.id) as { n: number };
      assert.ok(startedAfterASlotFreed.n > 0, "excess tasks wait as pending until a job slot frees");
      assert.equal(stack.sim.stats().jobsCreated, 8);
    } finally {
      await stack.close();
    }
  });

  test("tenant F's one task finishes long before tenant E's backlog of 40", async () => {
    const stack = await startStack({ adminKey: ADMIN, concurrency: 16 });
    try {
      const e = await newTenant(stack, "E", { max_concurrent_jobs: 2 });
      const f = await newTenant(stack, "F");
      const eIds = await Promise.all(
        Array.from(
          { length: 40 },
          async (_, i) => (await submit(stack, e.key, { text: `e${i}`, delay_ms: 150 })).body.task_id,
        ),
      );
      const fId = (await submit(stack, f.key, { text: "f", delay_ms: 150 })).body.task_id;
      const submittedAt = Date.now();
      // When each task ended, as the store recorded it (not when a poll happened to see it).
      const endedAt = () =>
        new Map(
          (
            stack.store.db
              .prepare("SELECT id, updated_at FROM tasks WHERE tenant_id IN (?, ?) AND status = 'succeeded'")
              .all(e.id, f.id) as { id: string; updated_at: number }[]
          ).map((r) => [r.id, r.updated_at - submittedAt]),
        );
      const doneAt = await waitFor(
        () => {
          const m = endedAt();
          return m.size === 41 ? m : null;
        },
        60_000,
        "all 41 tasks to finish",
      );
      const fDone = doneAt.get(fId)!;
      const eDone = eIds.map((id) => doneAt.get(id)!).sort((x, y) => x - y);
      const eLast = eDone.at(-1)!;
      assert.ok(fDone * 4 < eLast, `F finished at ${fDone} ms, E's backlog at ${eLast} ms`);
      const ahead = eDone.filter((t) => t < fDone).length;
      assert.ok(ahead <= 8, `F is not queued behind E's backlog (${ahead} of E's 40 finished first)`);
    } finally {
      await stack.close();
    }
  });
});

test("longhaul tenants create, list and rotate-key work on the store", async () => {
  const tmp = tempDir();
  const run = promisify(execFile);
  const env = { ...process.env, LONGHAUL_DATABASE_URL: `sqlite:${join(tmp.dir, "cli.db")}` };
  try {
    const created = await run(
      process.execPath,
      [...CLI_FROM_SOURCE, "tenants", "create", "cli-co", "--max-concurrent-jobs", "3"],
      { env },
    );
    const id = /tenant (tn_\S+)/.exec(created.stdout)?.[1];
    assert.ok(id, created.stdout);
    assert.match(created.stdout, /api key: lh_/);
    const listed = await run(process.execPath, [...CLI_FROM_SOURCE, "tenants", "list"], { env });
    assert.match(listed.stdout, new RegExp(`${id}\\tcli-co`));
    assert.match(listed.stdout, /"max_concurrent_jobs":3/);
    const rotated = await run(process.execPath, [...CLI_FROM_SOURCE, "tenants", "rotate-key", id], { env });
    assert.match(rotated.stdout, /api key: lh_/);
    await assert.rejects(
      run(process.execPath, [...CLI_FROM_SOURCE, "tenants", "create", "bad", "--budget-policy", "maybe"], {
        env,
      }),
    );
  } finally {
    tmp.cleanup();
  }
});
