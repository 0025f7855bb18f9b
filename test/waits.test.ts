import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { defineTask } from "../src/core/task-type.ts";
import { mintToken } from "../src/tokens/token.ts";
import { tempDir, waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const ended = new Set(["succeeded", "failed", "canceled", "timed_out"]);

async function submit(stack: Stack, type: string, input: unknown = {}) {
  const r = await stack.api("/v1/tasks", { body: { type, input } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.task_id as string;
}
const get = async (stack: Stack, id: string) => (await stack.api(`/v1/tasks/${id}`)).body;
const waitingStep = (stack: Stack, id: string, stepId: string) =>
  waitFor(
    async () => {
      const t = await get(stack, id);
      const s = t.steps.find((x: { id: string }) => x.id === stepId);
      return s?.status === "waiting" ? s : null;
    },
    10_000,
    `step ${stepId} of ${id} to wait`,
  );
const end = (stack: Stack, id: string) =>
  waitFor(
    async () => {
      const t = await get(stack, id);
      return ended.has(t.status) ? t : null;
    },
    15_000,
    `task ${id} to end`,
  );
const post = async (url: string, body: unknown, headers: Record<string, string> = {}) => {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text.startsWith("{") ? JSON.parse(text) : text };
};

let runs = 0;
const resumeCounter = defineTask("test.counted", async (_input, step) => {
  const n = await step.run("count", () => ++runs);
  const posted = await step.callback<{ ok: boolean }>("cb", { timeout: "1h" });
  const after = await step.run("after", () => "done");
  return { n, posted, after };
});
const earlyCallback = defineTask("test.early", async (_input, step) =>
  step.callback("cb", {}, async (url) => {
    // The service answers before the task has even suspended.
    const r = await post(url, { early: true });
    if (r.status !== 200) throw new Error(`callback refused: ${r.status}`);
  }),
);
const quorum = defineTask("test.quorum", async (_input, step) =>
  step.approval("sign-off", { approvers: ["alice", "bob", "carol"], quorum: 2, title: "Ship it?" }),
);
const approveOnTimeout = defineTask("test.approve-on-timeout", async (_input, step) =>
  step.approval("ok", { timeout: "300ms", onTimeout: "approve", remindAfter: "100ms" }),
);
const sleeper = defineTask("test.sleep", async (_input, step) => {
  await step.sleep("nap", "200ms");
  return "rested";
});
const signalWaiter = defineTask("test.signal", async (input: { delay: string; id: number }, step) => {
  await step.sleep("first", input.delay as "1ms");
  return step.waitForEvent("paid", {
    match: { event: "invoice.paid", data: { id: input.id } },
    timeout: "2s",
  });
});

describe("waits over HTTP", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({
      taskTypes: [resumeCounter, earlyCallback, quorum, approveOnTimeout, sleeper, signalWaiter],
    });
  });
  after(() => stack.close());

  test("a callback resumes the task, and completed steps never run again", async () => {
    const id = await submit(stack, "test.counted");
    const step = await waitingStep(stack, id, "cb");
    assert.match(step.callback_url, /^http:\/\/127\.0\.0\.1:\d+\/v1\/callbacks\/v1\./);
    assert.ok(step.deadline);
    const r = await post(step.callback_url, { ok: true });
    assert.deepEqual(r, { status: 200, body: { accepted: true, task_id: id, step_id: "cb" } });
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded");
    assert.deepEqual(t.output, { n: 1, posted: { ok: true }, after: "done" });
    assert.equal(runs, 1);
    // Reused: the step no longer waits.
    const again = await post(step.callback_url, { ok: false });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, "TOKEN_USED");
  });

  test("forged, misused and malformed tokens are refused", async () => {
    const id = await submit(stack, "demo.callback");
    const step = await waitingStep(stack, id, "callback");
    const url: string = step.callback_url;
    const last = url.at(-1) === "A" ? "B" : "A";
    const forged = await post(url.slice(0, -1) + last, {});
    assert.equal(forged.status, 401);
    const garbage = await post(`${stack.url}/v1/callbacks/not-a-token`, {});
    assert.equal(garbage.body.error.code, "TOKEN_MALFORMED");
    // A token for another tenant's task, minted with a key this deployment does not have.
    const { Keyring } = await import("../src/tokens/keyring.ts");
    const other = Keyring.from([{ id: "kx", secret: "another-deployment-secret-0123456789" }]);
    const foreign = mintToken(other, {
      tenantId: stack.tenantId,
      taskId: id,
      stepId: "callback",
      attempt: 1,
      purpose: "callback",
      expiresAt: Date.now() + 60_000,
    });
    assert.equal(
      (await post(`${stack.url}/v1/callbacks/${foreign}`, {})).body.error.code,
      "TOKEN_KEY_UNKNOWN",
    );
    // An approval link cannot post a callback result.
    const approveToken = mintToken(stack.app.keyring, {
      tenantId: stack.tenantId,
      taskId: id,
      stepId: "callback",
      attempt: 1,
      purpose: "approve",
      expiresAt: Date.now() + 60_000,
    });
    assert.equal((await post(`${stack.url}/v1/callbacks/${approveToken}`, {})).status, 403);
    const bad = await post(url, "{not json");
    assert.equal(bad.status, 400);
    assert.equal((await get(stack, id)).status, "waiting", "bad calls change nothing");
  });

  test("an expired token is refused with 410; a call after the deadline is kept as a late result", async () => {
    const id = await submit(stack, "demo.callback", { timeout_s: 0.3 });
    const step = await waitingStep(stack, id, "callback");
    const t = await end(stack, id);
    assert.equal(t.status, "timed_out");
    assert.equal(t.steps[0].error.code, "STEP_TIMED_OUT");
    const late = await post(step.callback_url, { too: "late" });
    assert.equal(late.status, 410);
    assert.equal(late.body.error.code, "TOKEN_EXPIRED");
    const after = await get(stack, id);
    assert.deepEqual(after.steps[0].late_result.output, { too: "late" });
    assert.equal(after.status, "timed_out");
    const expired = mintToken(stack.app.keyring, {
      tenantId: stack.tenantId,
      taskId: id,
      stepId: "callback",
      attempt: 1,
      purpose: "callback",
      expiresAt: Date.now() - 1000,
    });
    assert.equal((await post(`${stack.url}/v1/callbacks/${expired}`, {})).status, 410);
  });

  test("a canceled task's links answer 410", async () => {
    const id = await submit(stack, "demo.callback");
    const step = await waitingStep(stack, id, "callback");
    await stack.api(`/v1/tasks/${id}/cancel`, { method: "POST" });
    const r = await post(step.callback_url, {});
    assert.equal(r.status, 410);
    assert.equal(r.body.error.code, "WAIT_CANCELED");
  });

  test("a callback that arrives before the task has suspended satisfies its wait", async () => {
    const id = await submit(stack, "test.early");
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded", JSON.stringify(t.error));
    assert.deepEqual(t.output, { early: true });
  });

  test("approving on the page resumes the task with who decided and their comment", async () => {
    const id = await submit(stack, "demo.approval");
    const step = await waitingStep(stack, id, "approval");
    const page = await fetch(step.approval_url);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /text\/html/);
    const html = await page.text();
    assert.match(html, /Approve the demo task/);
    assert.match(html, /formaction="\/v1\/approvals\/v1\./);
    const form = await fetch(step.approval_url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ decision: "approve", approver: "dana", comment: "looks good" }).toString(),
    });
    assert.equal(form.status, 200);
    assert.match(await form.text(), /was recorded/);
    const t = await end(stack, id);
    assert.deepEqual(t.output, { approved: true, by: null, claimed_by: "dana", comment: "looks good" });
  });

  test("rejecting through the API resumes the task with approved: false", async () => {
    const id = await submit(stack, "demo.approval");
    const step = await waitingStep(stack, id, "approval");
    const wrong = await post(step.approvals[0].approve_url, { decision: "reject" });
    assert.equal(wrong.status, 403);
    const r = await post(step.approvals[0].reject_url, { comment: "not now", approver: "erin" });
    assert.equal(r.status, 200);
    const t = await end(stack, id);
    assert.deepEqual(t.output, { approved: false, by: null, claimed_by: "erin", comment: "not now" });
  });

  test("a quorum of 2 of 3 approvers decides once two approve; one person decides once", async () => {
    const id = await submit(stack, "test.quorum");
    const step = await waitingStep(stack, id, "sign-off");
    const link = (who: string) => step.approvals.find((a: { approver: string }) => a.approver === who);
    assert.equal((await post(link("alice").approve_url, {})).status, 200);
    const dup = await post(link("alice").reject_url, {});
    assert.equal(dup.status, 409);
    assert.equal(dup.body.error.code, "DECISION_DUPLICATE");
    assert.equal((await post(link("bob").reject_url, { comment: "no" })).status, 200);
    assert.equal((await get(stack, id)).status, "waiting");
    assert.equal((await post(link("carol").approve_url, { comment: "yes" })).status, 200);
    const t = await end(stack, id);
    assert.equal(t.output.approved, true);
    assert.equal(t.output.by, "carol");
    assert.deepEqual(
      t.steps[0].decisions.map((d: { approver: string; decision: string }) => [d.approver, d.decision]),
      [
        ["alice", "approve"],
        ["bob", "reject"],
        ["carol", "approve"],
      ],
    );
  });

  test("an approval past its deadline applies onTimeout, after a reminder event", async () => {
    const id = await submit(stack, "test.approve-on-timeout");
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded");
    assert.equal(t.output.approved, true);
    const events = await stack.store.taskEvents(stack.tenantId, 0, 100, id);
    assert.ok(events.some((e) => e.type === "step.reminder"));
  });

  test("a durable sleep resumes the task", async () => {
    const id = await submit(stack, "test.sleep");
    const t = await end(stack, id);
    assert.equal(t.output, "rested");
  });

  test("a signal sent before its wait is registered still satisfies it; a later one does too", async () => {
    const early = await submit(stack, "test.signal", { delay: "400ms", id: 1 });
    const sent = await stack.api("/v1/signals", {
      body: { name: "invoice.paid", data: { id: 1, amount: 5 }, id: "sig-1" },
    });
    assert.equal(sent.status, 202);
    assert.equal(sent.body.matched, 0, "nothing waits yet");
    const t1 = await end(stack, early);
    assert.deepEqual(t1.output.data, { id: 1, amount: 5 });

    const late = await submit(stack, "test.signal", { delay: "1ms", id: 2 });
    await waitingStep(stack, late, "paid");
    const other = await stack.api("/v1/signals", { body: { name: "invoice.paid", data: { id: 3 } } });
    assert.equal(other.body.matched, 0);
    const hit = await stack.api("/v1/signals", { body: { name: "invoice.paid", data: { id: 2 } } });
    assert.equal(hit.body.matched, 1);
    assert.deepEqual((await end(stack, late)).output.data, { id: 2 });
    const dup = await stack.api("/v1/signals", {
      body: { name: "invoice.paid", data: { id: 1 }, id: "sig-1" },
    });
    assert.equal(dup.body.duplicate, true);
  });

  test("graph branches wait in parallel, and the node that needs both runs after", async () => {
    const graph = {
      nodes: [
        { id: "legal", kind: "callback" },
        { id: "finance", kind: "callback" },
        {
          id: "publish",
          kind: "job",
          needs: ["legal", "finance"],
          with: { provider: "sim", input: { text: "{{ nodes.legal.output.note }}" } },
        },
      ],
    };
    const id = await submit(stack, "graph", graph);
    const [legal, finance] = await Promise.all([
      waitingStep(stack, id, "legal"),
      waitingStep(stack, id, "finance"),
    ]);
    assert.equal((await post(finance.callback_url, { note: "fine" })).status, 200);
    assert.equal((await post(legal.callback_url, { note: "cleared" })).status, 200);
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded", JSON.stringify(t.error));
    assert.deepEqual(t.output.nodes, {
      legal: { note: "cleared" },
      finance: { note: "fine" },
      publish: { text: "cleared" },
    });
  });

  test("a graph with a cycle or an unknown kind is refused at submit", async () => {
    const cycle = await stack.api("/v1/tasks", {
      body: {
        type: "graph",
        input: {
          nodes: [
            { id: "a", kind: "sleep", needs: ["b"], with: { duration: "1s" } },
            { id: "b", kind: "sleep", needs: ["a"], with: { duration: "1s" } },
          ],
        },
      },
    });
    assert.equal(cycle.status, 400);
    assert.match(cycle.body.error.message, /cycle/);
    const kind = await stack.api("/v1/tasks", {
      body: { type: "graph", input: { nodes: [{ id: "a", kind: "teleport" }] } },
    });
    assert.equal(kind.status, 400);
    assert.match(kind.body.error.message, /teleport/);
  });
});

test("after key rotation the old key still verifies until it is retired", async () => {
  const tmp = tempDir();
  const dbPath = join(tmp.dir, "rotate.db");
  const k1 = { id: "k1", secret: "first-secret-0123456789abcdefghij" };
  const k2 = { id: "k2", secret: "second-secret-0123456789abcdefghi" };
  const first = await startStack({ dbPath, tokens: { keys: [k1] } });
  const id = await submit(first, "demo.callback");
  const oldUrl = (await waitingStep(first, id, "callback")).callback_url as string;
  const tenantKey = first.key;
  await first.close();

  const rotated = await startStack({ dbPath, tokens: { keys: [k2, k1] } });
  const path = new URL(oldUrl).pathname;
  const fresh = await rotated.store.getTask(first.tenantId, id);
  assert.ok(fresh && tenantKey);
  const newUrl = rotated.app.urls.callback(first.tenantId, id, {
    stepId: "callback",
    attempts: 1,
    deadlineAt: fresh.steps[0]!.deadlineAt,
  });
  assert.notEqual(new URL(newUrl).pathname, path, "new links are signed with the new key");
  await rotated.close();

  const retired = await startStack({ dbPath, tokens: { keys: [k2] } });
  const refused = await post(retired.url + path, { v: 1 });
  assert.equal(refused.body.error?.code, "TOKEN_KEY_UNKNOWN");
  await retired.close();

  const again = await startStack({ dbPath, tokens: { keys: [k2, k1] } });
  try {
    const ok = await post(again.url + path, { v: 2 });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  } finally {
    await again.close();
    tmp.cleanup();
  }
});
