import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { NonRetriableError } from "../src/core/errors.ts";
import { defineTask } from "../src/core/task-type.ts";
import { tempDir, waitFor } from "./helpers.ts";
import { CLI_FROM_SOURCE } from "./processes.ts";
import { type Stack, startStack } from "./stack.ts";

// Re-running a task (ARCHITECTURE §4.4) over real HTTP on a SQLite file: a new task that names
// the old one, reusing the steps that succeeded (their code is not run, their job not dispatched
// again) or running from the start.

const ended = (s: string) => ["succeeded", "failed", "canceled", "timed_out"].includes(s);

/** Side effects by input key: how often each step's code ran, across every task of that input. */
const ran = {
  one: new Map<string, number>(),
  two: new Map<string, number>(),
  three: new Map<string, number>(),
};
const bump = (m: Map<string, number>, key: string) => {
  const n = (m.get(key) ?? 0) + 1;
  m.set(key, n);
  return n;
};

/**
 * Four steps: a `step.run`, a simulator job, a `step.run` that fails for good the first time it
 * runs for its key (and succeeds after), and a last `step.run`.
 */
const flaky = defineTask<{ key: string }, unknown>("test.rerun", async (input, step) => {
  const one = await step.run("one", async () => bump(ran.one, input.key));
  const echo = await step.job<{ text: string }>("echo", {
    provider: "sim",
    input: { instruction: "echo", text: input.key },
  });
  await step.run("two", async () => {
    if (bump(ran.two, input.key) === 1) throw new NonRetriableError("the first attempt of two fails");
  });
  const three = await step.run("three", async () => bump(ran.three, input.key));
  return { one, echo: echo.text, three };
});

/** Fails its first run for each key, at its only step; succeeds after. */
const failsOnce = defineTask<{ key: string }, unknown>("test.rerun-bulk", async (input, step) =>
  step.run("only", async () => {
    if (bump(ran.two, `bulk:${input.key}`) === 1) throw new NonRetriableError("first run fails");
    return input.key;
  }),
);

function cli(args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [...CLI_FROM_SOURCE, ...args],
      { env: { ...process.env, LONGHAUL_DATABASE_URL: "" } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("re-running a task over HTTP on a SQLite file", () => {
  let stack: Stack;
  const tmp = tempDir("longhaul-rerun-");
  const dbPath = join(tmp.dir, "longhaul.db");
  before(async () => {
    stack = await startStack({ taskTypes: [flaky, failsOnce], dbPath });
  });
  after(async () => {
    await stack.close();
    tmp.cleanup();
  });

  const untilEnded = (id: string) =>
    waitFor(
      async () => {
        const r = await stack.api(`/v1/tasks/${id}`);
        return ended(r.body.status) ? r.body : null;
      },
      30_000,
      `task ${id} to end`,
    );

  /** A test.rerun task of `key`, run until it fails at step "two". */
  async function failedTask(key: string) {
    const submitted = await stack.api("/v1/tasks", { body: { type: "test.rerun", input: { key } } });
    assert.equal(submitted.status, 202);
    const task = await untilEnded(submitted.body.task_id);
    assert.equal(task.status, "failed", JSON.stringify(task.error));
    assert.deepEqual(
      task.steps.map((s: { id: string; status: string }) => [s.id, s.status]),
      [
        ["one", "succeeded"],
        ["echo", "succeeded"],
        ["two", "failed"],
      ],
    );
    return task;
  }

  test("from the failed step: the steps that succeeded are reused, not run or dispatched again", async () => {
    const old = await failedTask("a");
    const r = await stack.api(`/v1/tasks/${old.task_id}/rerun`, { body: {} });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(r.body.rerun_of, old.task_id);
    assert.equal(r.body.created, true);
    assert.equal(r.body.reused_steps, 2);
    assert.notEqual(r.body.task_id, old.task_id);
    const task = await untilEnded(r.body.task_id);
    assert.equal(task.status, "succeeded", JSON.stringify(task.error));
    assert.deepEqual(task.output, { one: 1, echo: "a", three: 1 });
    assert.equal(ran.one.get("a"), 1, "step one's code ran once, for the old task only");
    assert.equal(ran.two.get("a"), 2);
    assert.equal(ran.three.get("a"), 1);
    // The reused job is the old task's: nothing was created at the provider for the new one.
    assert.equal(stack.sim.stats().createsByKey[`${old.task_id}:echo`], 1);
    assert.equal(stack.sim.stats().createsByKey[`${task.task_id}:echo`], undefined);
    assert.deepEqual(task.jobs, []);
    assert.deepEqual(
      task.steps.map((s: { id: string; status: string }) => [s.id, s.status]),
      [
        ["one", "succeeded"],
        ["echo", "succeeded"],
        ["two", "succeeded"],
        ["three", "succeeded"],
      ],
    );
    assert.equal(task.rerun_of, old.task_id);
    assert.equal(task.type, old.type);
    assert.deepEqual(task.input, old.input);
    assert.deepEqual(task.reruns, []);
    // The old task has not moved, and names its re-run.
    const again = (await stack.api(`/v1/tasks/${old.task_id}`)).body;
    assert.equal(again.status, "failed");
    assert.equal(again.rerun_of, null);
    assert.deepEqual(again.reruns, [task.task_id]);
    const listed = await stack.api("/v1/tasks?type=test.rerun&limit=200");
    assert.equal(
      listed.body.data.find((t: { task_id: string }) => t.task_id === task.task_id).rerun_of,
      old.task_id,
    );
  });

  test("from the start: every step runs again, the job is dispatched again", async () => {
    const old = await failedTask("b");
    const r = await stack.api(`/v1/tasks/${old.task_id}/rerun`, { body: { from: "start" } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(r.body.reused_steps, 0);
    const task = await untilEnded(r.body.task_id);
    assert.equal(task.status, "succeeded", JSON.stringify(task.error));
    assert.deepEqual(task.output, { one: 2, echo: "b", three: 1 });
    assert.equal(ran.one.get("b"), 2);
    assert.equal(stack.sim.stats().createsByKey[`${task.task_id}:echo`], 1);
    assert.equal(task.jobs.length, 1);
  });

  test("the same client_request_id (or Idempotency-Key) twice makes one re-run", async () => {
    const old = await failedTask("c");
    const first = await stack.api(`/v1/tasks/${old.task_id}/rerun`, { body: { client_request_id: "rr-1" } });
    const second = await stack.api(`/v1/tasks/${old.task_id}/rerun`, { body: { client_request_id: "rr-1" } });
    assert.equal(first.status, 202);
    assert.equal(second.status, 200);
    assert.equal(second.body.created, false);
    assert.equal(second.body.reused_steps, 2);
    assert.equal(second.body.task_id, first.body.task_id);
    const byHeader = await stack.api(`/v1/tasks/${old.task_id}/rerun`, {
      body: {},
      headers: { "idempotency-key": "rr-1" },
    });
    assert.equal(byHeader.body.task_id, first.body.task_id);
    // The id names a re-run of that task: a submit with it is a conflict, not that task.
    const submit = await stack.api("/v1/tasks", {
      body: { type: "test.rerun", input: { key: "c" }, client_request_id: "rr-1" },
    });
    assert.equal(submit.status, 409);
    assert.equal(submit.body.error.code, "IDEMPOTENCY_CONFLICT");
    await untilEnded(first.body.task_id);
    assert.deepEqual((await stack.api(`/v1/tasks/${old.task_id}`)).body.reruns, [first.body.task_id]);
  });

  test("a task still going or that succeeded is not re-run (409); another tenant's is not found (404)", async () => {
    const waiting = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: "slow", delay_ms: 3_600_000 } },
    });
    const id = waiting.body.task_id as string;
    await waitFor(async () => (await stack.api(`/v1/tasks/${id}`)).body.status === "waiting");
    const refused = await stack.api(`/v1/tasks/${id}/rerun`, { body: {} });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "TASK_NOT_RERUNNABLE");

    // Canceled, it re-runs: its job step did not succeed, so nothing is reused.
    assert.equal((await stack.api(`/v1/tasks/${id}/cancel`, { method: "POST" })).status, 200);
    const rerun = await stack.api(`/v1/tasks/${id}/rerun`, { body: {} });
    assert.equal(rerun.status, 202, JSON.stringify(rerun.body));
    assert.equal(rerun.body.reused_steps, 0);
    await stack.api(`/v1/tasks/${rerun.body.task_id}/cancel`, { method: "POST" });

    const quick = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "ok" } } });
    const done = await untilEnded(quick.body.task_id);
    assert.equal(done.status, "succeeded");
    const again = await stack.api(`/v1/tasks/${done.task_id}/rerun`, { body: { from: "start" } });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, "TASK_NOT_RERUNNABLE");

    const bad = await stack.api(`/v1/tasks/${id}/rerun`, { body: { from: "middle" } });
    assert.equal(bad.status, 400);

    const otherKey = newApiKey();
    await stack.store.createTenant({ name: "other", keyHash: hashApiKey(otherKey) });
    const foreign = await stack.api(`/v1/tasks/${id}/rerun`, {
      body: {},
      headers: { authorization: `Bearer ${otherKey}` },
    });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error.code, "TASK_NOT_FOUND");
    assert.equal((await stack.api("/v1/tasks/t_missing/rerun", { body: {} })).status, 404);
    // No body at all is the default: from the failed step.
    const bare = await fetch(`${stack.url}/v1/tasks/${id}/rerun`, {
      method: "POST",
      headers: { authorization: `Bearer ${stack.key}` },
    });
    assert.equal(bare.status, 202);
    await stack.api(`/v1/tasks/${((await bare.json()) as { task_id: string }).task_id}/cancel`, {
      method: "POST",
    });
  });

  test("bulk: a dry run names the matching tasks, a re-run makes one of each, asked again makes none", async () => {
    const ids: string[] = [];
    for (const key of ["x", "y", "z"]) {
      const s = await stack.api("/v1/tasks", { body: { type: "test.rerun-bulk", input: { key } } });
      ids.push(s.body.task_id);
    }
    for (const id of ids) assert.equal((await untilEnded(id)).status, "failed");
    const filter = { type: "test.rerun-bulk", status: "failed" };

    const dry = await stack.api("/v1/tasks/rerun", { body: { filter, dry_run: true } });
    assert.equal(dry.status, 200, JSON.stringify(dry.body));
    assert.deepEqual(new Set(dry.body.matched), new Set(ids));
    assert.deepEqual(dry.body.data, []);
    assert.equal(dry.body.dry_run, true);
    for (const id of ids) assert.deepEqual((await stack.api(`/v1/tasks/${id}`)).body.reruns, []);

    const limited = await stack.api("/v1/tasks/rerun", { body: { filter, limit: 2 } });
    assert.equal(limited.status, 200, JSON.stringify(limited.body));
    assert.equal(limited.body.data.length, 2);
    assert.equal(limited.body.more, true);
    const rest = await stack.api("/v1/tasks/rerun", { body: { filter } });
    assert.equal(rest.body.data.length, 1);
    assert.equal(rest.body.more, false);
    const made = [...limited.body.data, ...rest.body.data];
    assert.deepEqual(new Set(made.map((m: { rerun_of: string }) => m.rerun_of)), new Set(ids));
    for (const m of made) assert.equal((await untilEnded(m.task_id)).status, "succeeded");

    const none = await stack.api("/v1/tasks/rerun", { body: { filter } });
    assert.deepEqual(none.body.matched, []);
    const wrong = await stack.api("/v1/tasks/rerun", { body: { filter: { status: "succeeded" } } });
    assert.equal(wrong.status, 400);
  });

  test("`longhaul tasks rerun` re-runs from the command line, on the same database", async () => {
    const old = await failedTask("cli");
    const db = `sqlite:${dbPath}`;
    const args = ["tasks", "rerun", old.task_id, "--tenant", stack.tenantId, "--database-url", db];
    const r = await cli([...args, "--json", "--client-request-id", "cli-1"]);
    assert.equal(r.code, 0, r.stderr);
    const answer = JSON.parse(r.stdout);
    assert.equal(answer.rerun_of, old.task_id);
    assert.equal(answer.reused_steps, 2);
    assert.equal(answer.created, true);
    const task = await untilEnded(answer.task_id);
    assert.equal(task.status, "succeeded", JSON.stringify(task.error));
    assert.equal(ran.one.get("cli"), 1);

    const again = await cli([...args, "--client-request-id", "cli-1"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout.trim(), `${answer.task_id}\tsucceeded\t${old.task_id}`);

    const refused = await cli([
      "tasks",
      "rerun",
      answer.task_id,
      "--tenant",
      stack.tenantId,
      "--database-url",
      db,
    ]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /TASK_NOT_RERUNNABLE/);
  });
});
