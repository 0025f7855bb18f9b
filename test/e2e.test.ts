import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";
import { waitFor } from "./helpers.ts";
import { SIM_SECRET, type Stack, startStack } from "./stack.ts";

const ended = (s: string) => ["succeeded", "failed", "canceled", "timed_out"].includes(s);

async function runToEnd(stack: Stack, body: unknown) {
  const submitted = await stack.api("/v1/tasks", { body });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
  const id = submitted.body.task_id as string;
  return waitFor(
    async () => {
      const r = await stack.api(`/v1/tasks/${id}`);
      return ended(r.body.status) ? r.body : null;
    },
    15_000,
    `task ${id} to end`,
  );
}

function inbox(stack: Stack, jobExternalId: string) {
  return stack.store.db
    .prepare("SELECT event_id, type, status FROM inbox_events WHERE job_external_id = ? ORDER BY received_at")
    .all(jobExternalId) as { event_id: string; type: string; status: string }[];
}

describe("tasks end to end over HTTP on a SQLite file", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack.close());

  test("demo.echo succeeds through a signed webhook with the simulator's output and exactly one job", async () => {
    const task = await runToEnd(stack, { type: "demo.echo", input: { text: "hello", delay_ms: 50 } });
    assert.equal(task.status, "succeeded");
    assert.deepEqual(task.output, { text: "hello" });
    assert.equal(task.jobs.length, 1);
    assert.equal(task.jobs[0].provider, "sim");
    assert.equal(task.jobs[0].status, "succeeded");
    assert.ok(task.jobs[0].usage.total_tokens > 0);
    assert.equal(task.steps[0].job_id, task.jobs[0].job_id);
    assert.equal(stack.sim.stats().createsByKey[`${task.task_id}:echo`], 1);
  });

  test("a job that fails fails its task with the provider's error", async () => {
    const task = await runToEnd(stack, { type: "demo.echo", input: { text: "x", fail: true } });
    assert.equal(task.status, "failed");
    assert.equal(task.error.code, "model_error");
    assert.equal(task.steps[0].status, "failed");
  });

  test("rag_summary summarizes with the simulated LLM, then chunks the document and indexes the chunks", async () => {
    const document = `${"Longhaul keeps long work durable. ".repeat(60)}\n\nIt resumes tasks on signed webhooks.`;
    const task = await runToEnd(stack, { type: "rag_summary", input: { document } });
    assert.equal(task.status, "succeeded", JSON.stringify(task.error));
    assert.match(task.output.summary, /^Summary: /);
    assert.ok(task.output.chunks >= 2);
    assert.deepEqual(
      task.steps.map((s: { id: string; status: string }) => [s.id, s.status]),
      [
        ["summarize", "succeeded"],
        ["chunk", "succeeded"],
        ["store-chunks", "succeeded"],
        ["artifact:report.pdf", "succeeded"],
      ],
    );
    assert.equal(task.output.report.content_type, "application/pdf");
    assert.deepEqual(task.output.index, { embedder: "hashed-ngram", dimensions: 384 });
    // Indexed once: the chunks are the tenant's, as many as the output says.
    assert.equal(await stack.store.countChunks(stack.tenantId, task.task_id), task.output.chunks);
  });

  test("submitting with the same client_request_id or Idempotency-Key returns the same task", async () => {
    const first = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: "a" }, client_request_id: "r-1" },
    });
    const again = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: "a" }, client_request_id: "r-1" },
    });
    assert.equal(first.status, 202);
    assert.equal(again.status, 200);
    assert.equal(again.body.task_id, first.body.task_id);

    const burst = await Promise.all(
      Array.from({ length: 20 }, () =>
        stack.api("/v1/tasks", {
          body: { type: "demo.echo", input: { text: "b" } },
          headers: { "idempotency-key": "k-burst" },
        }),
      ),
    );
    assert.equal(new Set(burst.map((r) => r.body.task_id)).size, 1);
    assert.equal(burst.filter((r) => r.status === 202).length, 1);

    const conflict = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: "c" }, client_request_id: "r-1" },
    });
    assert.equal(conflict.status, 409);
    assert.equal(conflict.body.error.code, "IDEMPOTENCY_CONFLICT");
  });

  test("the task list pages with a cursor and filters by status and type", async () => {
    const page1 = await stack.api("/v1/tasks?limit=2");
    assert.equal(page1.status, 200);
    assert.equal(page1.body.data.length, 2);
    const page2 = await stack.api(`/v1/tasks?limit=2&cursor=${page1.body.next_cursor}`);
    assert.ok(page2.body.data.every((t: { task_id: string }) => t.task_id < page1.body.data[1].task_id));
    const failed = await stack.api("/v1/tasks?status=failed&type=demo.echo");
    assert.ok(failed.body.data.length >= 1);
    assert.ok(failed.body.data.every((t: { status: string }) => t.status === "failed"));
  });

  test("a canceled task stops waiting and its job is canceled at the provider", async () => {
    const s = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: "slow", delay_ms: 60_000 } },
    });
    const id = s.body.task_id;
    const waiting = await waitFor(async () => {
      const r = await stack.api(`/v1/tasks/${id}`);
      return r.body.jobs[0]?.job_id ? r.body : null;
    });
    const c = await stack.api(`/v1/tasks/${id}/cancel`, { method: "POST" });
    assert.deepEqual(c.body, { task_id: id, status: "canceled" });
    const jobId = waiting.jobs[0].job_id;
    await waitFor(async () => {
      const r = await fetch(`${stack.sim.url}/v1/jobs/${jobId}`);
      return ((await r.json()) as { status: string }).status === "canceled";
    });
    const again = await stack.api(`/v1/tasks/${id}/cancel`, { method: "POST" });
    assert.equal(again.status, 200);
    const done = await runToEnd(stack, { type: "demo.echo", input: { text: "x" } });
    const late = await stack.api(`/v1/tasks/${done.task_id}/cancel`, { method: "POST" });
    assert.equal(late.status, 409);
    assert.equal(late.body.error.code, "TASK_NOT_CANCELABLE");
  });

  test("bad requests get clear errors with stable codes, never a 5xx", async () => {
    const cases: [string, RequestInit, number, string][] = [
      ["/v1/tasks", { method: "POST", body: "{}" }, 401, "UNAUTHORIZED"],
      ["/v1/tasks", { method: "POST", headers: { authorization: "Bearer nope" } }, 401, "UNAUTHORIZED"],
    ];
    for (const [path, init, status, code] of cases) {
      const r = await fetch(stack.url + path, init);
      assert.equal(r.status, status);
      assert.equal(((await r.json()) as any).error.code, code);
    }
    const expect = async (p: Promise<{ status: number; body: any }>, status: number, code: string) => {
      const r = await p;
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(r.body.error.code, code);
      assert.equal(typeof r.body.error.message, "string");
    };
    await expect(stack.api("/v1/tasks", { body: "{not json" }), 400, "INVALID_JSON");
    await expect(stack.api("/v1/tasks", { body: { input: {} } }), 400, "VALIDATION_FAILED");
    await expect(stack.api("/v1/tasks", { body: [1, 2] }), 400, "VALIDATION_FAILED");
    await expect(stack.api("/v1/tasks", { body: { type: "nope" } }), 422, "TASK_TYPE_UNKNOWN");
    await expect(
      stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: 5 } } }),
      400,
      "VALIDATION_FAILED",
    );
    await expect(
      stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "a" }, client_request_id: 7 } }),
      400,
      "VALIDATION_FAILED",
    );
    await expect(
      stack.api("/v1/tasks", {
        body: { type: "demo.echo", input: { text: "a" }, client_request_id: "a\u0000b" },
      }),
      400,
      "VALIDATION_FAILED",
    );
    await expect(stack.api("/v1/tasks/t_unknown"), 404, "TASK_NOT_FOUND");
    await expect(stack.api("/v1/tasks/t_%00x"), 400, "BAD_REQUEST");
    // Refused by the router before any route runs, in the same error shape.
    await expect(stack.api("/v1/tasks/t_%zz"), 400, "BAD_REQUEST");
    await expect(stack.api(`/v1/tasks/t_${"x".repeat(3000)}`), 414, "URL_TOO_LONG");
    await expect(stack.api("/v1/tasks/t_unknown/cancel", { method: "POST" }), 404, "TASK_NOT_FOUND");
    await expect(stack.api("/v1/tasks?limit=0"), 400, "VALIDATION_FAILED");
    await expect(stack.api("/v1/tasks?status=done"), 400, "VALIDATION_FAILED");
    await expect(stack.api("/v1/nothing"), 404, "NOT_FOUND");
    const health = await fetch(`${stack.url}/healthz`);
    assert.equal(health.status, 200);
  });

  test("ingress refuses bad signatures and unknown sources, and answers duplicates with 200", async () => {
    const body = JSON.stringify({ id: "evt_manual", type: "job.running", data: { job_id: "job_unknown" } });
    const ts = Math.floor(Date.now() / 1000);
    const headers = (secret: string) => ({
      "content-type": "application/json",
      "webhook-id": "evt_manual",
      "webhook-timestamp": String(ts),
      "webhook-signature": signStandardWebhook({ id: "evt_manual", timestampS: ts, body, secret }),
    });
    const post = (source: string, h: Record<string, string>, b = body) =>
      fetch(`${stack.url}/hooks/${source}`, { method: "POST", headers: h, body: b });
    const forged = await post("sim", headers("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    assert.equal(forged.status, 401);
    assert.equal(((await forged.json()) as any).error.code, "SIGNATURE_INVALID");
    assert.equal((await post("nope", headers(SIM_SECRET))).status, 404);
    const unsigned = await post("sim", { "content-type": "application/json" });
    assert.equal(unsigned.status, 401);
    const first = await post("sim", headers(SIM_SECRET));
    assert.equal(first.status, 200);
    assert.deepEqual(await first.json(), { received: true, duplicate: false });
    const dup = await post("sim", headers(SIM_SECRET));
    assert.deepEqual(await dup.json(), { received: true, duplicate: true });
    // An event for an unknown job is kept, not lost (ARCHITECTURE §3.5).
    await waitFor(() => inbox(stack, "job_unknown")[0]?.status === "unmatched");
  });
});

describe("webhook chaos", () => {
  test("a duplicated webhook is applied once", async () => {
    const stack = await startStack({ chaos: { duplicate: 1 } });
    try {
      const task = await runToEnd(stack, { type: "demo.echo", input: { text: "dup" } });
      assert.equal(task.status, "succeeded");
      await waitFor(() => stack.sim.stats().duplicated >= 2, 5000, "duplicates to be sent");
      const rows = inbox(stack, task.jobs[0].job_id);
      assert.deepEqual(rows.map((r) => [r.type, r.status]).sort(), [
        ["job.running", "applied"],
        ["job.succeeded", "applied"],
      ]);
      const events = await stack.store.taskEvents(stack.tenantId, 0, 1000, task.task_id);
      assert.equal(events.filter((e) => e.type === "step.succeeded").length, 1);
      assert.equal(events.filter((e) => e.type === "task.succeeded").length, 1);
    } finally {
      await stack.close();
    }
  });

  test("a running event that arrives after succeeded is recorded and ignored", async () => {
    const stack = await startStack({ chaos: { reorder: 1 } });
    try {
      const task = await runToEnd(stack, { type: "demo.echo", input: { text: "late" } });
      assert.equal(task.status, "succeeded");
      const rows = await waitFor(() => {
        const r = inbox(stack, task.jobs[0].job_id);
        return r.length === 2 ? r : null;
      });
      assert.deepEqual(
        rows.map((r) => [r.type, r.status]),
        [
          ["job.succeeded", "applied"],
          ["job.running", "ignored"],
        ],
      );
      const after = await stack.api(`/v1/tasks/${task.task_id}`);
      assert.equal(after.body.jobs[0].status, "succeeded");
    } finally {
      await stack.close();
    }
  });
});
