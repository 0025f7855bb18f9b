import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { LonghaulClient } from "../src/client/index.ts";
import { defineTask } from "../src/core/task-type.ts";
import { type ApprovalConfig, approvalOutcome } from "../src/core/wait.ts";
import { timelineEvents } from "../src/http/timeline-routes.ts";
import type { StepRow, TaskEventRow } from "../src/store/store.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";
import { end, get, submit, waitingStep } from "./task-waits.ts";

const post = async (url: string, body: unknown) => {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text.startsWith("{") ? JSON.parse(text) : text };
};
const page = async (url: string) => {
  const r = await fetch(url);
  assert.equal(r.status, 200);
  return r.text();
};
const buttons = (html: string) => [...html.matchAll(/name="decision" value="(\w+)"/g)].map((m) => m[1]);
const actions = (html: string) => [...new Set([...html.matchAll(/formaction="([^"]+)"/g)].map((m) => m[1]))];

const payment = defineTask(
  "test.payment-approval",
  async (_input: { amount: number; customer: string; card_number: string }, step) =>
    step.approval("pay", {
      title: "Pay this invoice?",
      description: "Paid from the operating account.",
      show: ["amount", "customer"],
    }),
);
const anonymousQuorum = defineTask("test.anonymous-quorum", async (_input, step) =>
  step.approval("sign-off", { quorum: 2 }),
);
const namedApprover = defineTask("test.named-approver", async (_input, step) =>
  step.approval("sign-off", { approvers: ["ana@acme.test"] }),
);
const anonymousApproval = defineTask("test.anonymous-approval", async (_input, step) =>
  step.approval("sign-off", {}),
);

const timelineOf = async (stack: Stack, id: string) => {
  const r = await stack.api(`/v1/tasks/${id}/timeline`);
  assert.equal(r.status, 200);
  return (r.body.entries as { kind: string; type?: string; data?: any }[]).filter(
    (e) => e.kind === "event" && e.type === "step.decided",
  );
};

describe("approval links over HTTP", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ taskTypes: [payment, anonymousQuorum, namedApprover, anonymousApproval] });
  });
  after(() => stack.close());

  test("approval_url rejects with {decision: reject}, and the task resumes with approved: false", async () => {
    const id = await submit(stack, "demo.approval");
    const step = await waitingStep(stack, id, "approval");
    const r = await post(step.approval_url, { decision: "reject", comment: "not now", approver: "erin" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { accepted: true, task_id: id, step_id: "approval", decision: "reject" });
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded");
    assert.deepEqual(t.output, { approved: false, by: null, claimed_by: "erin", comment: "not now" });
  });

  test("approval_url approves with {decision: approve}, and each approver's entry has its own approval_url", async () => {
    const id = await submit(stack, "demo.approval");
    const step = await waitingStep(stack, id, "approval");
    assert.equal(step.approvals[0].approval_url, step.approval_url);
    assert.notEqual(step.approval_url, step.approvals[0].approve_url);
    const r = await post(step.approval_url, { decision: "approve", approver: "dana" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual((await end(stack, id)).output, {
      approved: true,
      by: null,
      claimed_by: "dana",
      comment: null,
    });
  });

  test("approval_url refuses a missing or unknown decision with 400 VALIDATION_FAILED naming decision", async () => {
    const id = await submit(stack, "demo.approval");
    const step = await waitingStep(stack, id, "approval");
    for (const body of [{}, { decision: "maybe" }, { decision: 1 }, { comment: "no decision" }]) {
      const r = await post(step.approval_url, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.code, "VALIDATION_FAILED");
      assert.match(r.body.error.message, /decision/);
    }
    // The step is stored waiting before the run suspends; the task is waiting once it has.
    const t = await waitFor(async () => {
      const now = await get(stack, id);
      return now.status === "running" ? null : now;
    });
    assert.equal(t.status, "waiting", "refused decisions change nothing");
    assert.equal(t.steps[0].decisions, undefined);
  });

  test("the page of approval_url offers both decisions; a one-click link's page offers only its own", async () => {
    const id = await submit(stack, "demo.approval");
    const step = await waitingStep(stack, id, "approval");
    const own = (url: string) => new URL(url).pathname;
    const both = await page(step.approval_url);
    assert.deepEqual(buttons(both), ["approve", "reject"]);
    assert.deepEqual(actions(both), [own(step.approval_url)]);
    const approveOnly = await page(step.approvals[0].approve_url);
    assert.deepEqual(buttons(approveOnly), ["approve"]);
    assert.deepEqual(actions(approveOnly), [own(step.approvals[0].approve_url)]);
    const rejectOnly = await page(step.approvals[0].reject_url);
    assert.deepEqual(buttons(rejectOnly), ["reject"]);
    assert.deepEqual(actions(rejectOnly), [own(step.approvals[0].reject_url)]);
  });

  test("a reject from the page of approval_url is recorded as a reject", async () => {
    const id = await submit(stack, "demo.approval");
    const step = await waitingStep(stack, id, "approval");
    const form = await fetch(step.approval_url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ decision: "reject", approver: "finn" }).toString(),
    });
    assert.equal(form.status, 200);
    assert.match(await form.text(), /Your decision \(reject\) was recorded/);
    assert.deepEqual((await end(stack, id)).output, {
      approved: false,
      by: null,
      claimed_by: "finn",
      comment: null,
    });
  });

  test("the client rejects and approves through approval_url", async () => {
    const client = new LonghaulClient({ baseUrl: stack.url, apiKey: stack.key });
    const a = await submit(stack, "demo.approval");
    const first = await waitingStep(stack, a, "approval");
    const rejected = await client.reject(first.approval_url, { comment: "no", approver: "gil" });
    assert.equal(rejected.decision, "reject");
    assert.equal((await end(stack, a)).output.approved, false);
    const b = await submit(stack, "demo.approval");
    const second = await waitingStep(stack, b, "approval");
    assert.equal((await client.approve(second.approval_url)).decision, "approve");
    assert.equal((await end(stack, b)).output.approved, true);
  });

  test("a graph approval node with quorum 2 and no approvers is refused at submit", async () => {
    const r = await stack.api("/v1/tasks", {
      body: {
        type: "graph",
        input: { nodes: [{ id: "review", kind: "approval", with: { quorum: 2 } }] },
      },
    });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error.code, "VALIDATION_FAILED");
    assert.match(r.body.error.message, /with\.quorum/);
    assert.match(r.body.error.message, /no approvers/);
  });

  test("step.approval with quorum 2 and no approvers fails the task with VALIDATION_FAILED, not retried", async () => {
    const id = await submit(stack, "test.anonymous-quorum");
    const t = await end(stack, id);
    assert.equal(t.status, "failed");
    assert.equal(t.error.code, "VALIDATION_FAILED");
    assert.match(t.error.message, /no approvers/);
    assert.equal(t.steps.length, 0, "no wait was registered");
  });

  test("a graph approval of 2 of 3 named approvers completes once two approve", async () => {
    const id = await submit(stack, "graph", {
      nodes: [
        {
          id: "review",
          kind: "approval",
          with: { approvers: ["ana", "ben", "cy"], quorum: 2, title: "Publish?" },
        },
      ],
    });
    const step = await waitingStep(stack, id, "review");
    assert.equal(step.quorum, 2);
    const link = (who: string) => step.approvals.find((a: { approver: string }) => a.approver === who);
    assert.equal((await post(link("ben").approval_url, { decision: "reject" })).status, 200);
    assert.equal((await post(link("ana").approval_url, { decision: "approve" })).status, 200);
    assert.equal((await get(stack, id)).status, "waiting", "one approval of two is not enough");
    assert.equal((await post(link("cy").approve_url, {})).status, 200);
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded", JSON.stringify(t.error));
    assert.equal(t.output.nodes.review.approved, true);
    assert.equal(t.output.nodes.review.by, "cy");
  });

  test("the approval page shows title, description and the opted-in input fields, never the rest", async () => {
    const id = await submit(stack, "test.payment-approval", {
      amount: 1250,
      customer: "Acme Widgets",
      card_number: "4111-1111-SECRET-1111",
    });
    const step = await waitingStep(stack, id, "pay");
    for (const url of [step.approval_url, step.approvals[0].approve_url]) {
      const html = await page(url);
      assert.match(html, /Pay this invoice\?/);
      assert.match(html, /Paid from the operating account\./);
      assert.match(html, /Acme Widgets/);
      assert.match(html, /1250/);
      assert.doesNotMatch(html, /SECRET/);
      assert.doesNotMatch(html, /card_number/);
    }
  });

  test("a graph approval shows only the graph input fields named in with.show", async () => {
    const id = await submit(stack, "graph", {
      input: { amount: 99, token: "tok-SECRET" },
      nodes: [{ id: "review", kind: "approval", with: { title: "Refund?", show: ["amount"] } }],
    });
    const step = await waitingStep(stack, id, "review");
    const html = await page(step.approval_url);
    assert.match(html, /Refund\?/);
    assert.match(html, /<dt>input\.amount<\/dt><dd><pre>99<\/pre>/);
    assert.doesNotMatch(html, /SECRET/);
    const bad = await stack.api("/v1/tasks", {
      body: {
        type: "graph",
        input: { nodes: [{ id: "review", kind: "approval", with: { show: "amount" } }] },
      },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /with\.show/);
  });

  test("a name typed on an anonymous link is a claim: the output, decisions, timeline and page say so", async () => {
    const id = await submit(stack, "test.anonymous-approval");
    const step = await waitingStep(stack, id, "sign-off");
    const r = await post(step.approval_url, {
      decision: "approve",
      approver: "Head of Finance",
      comment: "ok",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded");
    const { decisions, ...output } = t.output;
    assert.deepEqual(output, { approved: true, by: null, claimed_by: "Head of Finance", comment: "ok" });
    assert.deepEqual(
      decisions.map(({ decidedAt: _, ...x }: { decidedAt: string }) => x),
      [{ approver: "anonymous", claimed_by: "Head of Finance", decision: "approve", comment: "ok" }],
    );
    const { decided_at: _, ...decision } = t.steps[0].decisions[0];
    assert.deepEqual(decision, {
      approver: "anonymous",
      claimed_by: "Head of Finance",
      decision: "approve",
      comment: "ok",
      channel: "shared",
      address: "127.0.0.1",
      user_agent: "node",
    });
    assert.deepEqual(
      (await timelineOf(stack, id)).map((e) => e.data),
      [
        {
          step_id: "sign-off",
          approver: "anonymous",
          claimed_by: "Head of Finance",
          channel: "shared",
          decision: "approve",
          comment: "ok",
        },
      ],
    );
    assert.match(
      await page(step.approval_url),
      /<strong>Head of Finance<\/strong> <span class="claim">\(claimed name, not verified\)<\/span> approved/,
    );

    // Without a name the decision is by nobody longhaul knows, and nothing is claimed.
    const quiet = await submit(stack, "test.anonymous-approval");
    const quietStep = await waitingStep(stack, quiet, "sign-off");
    assert.equal((await post(quietStep.approval_url, { decision: "reject" })).status, 200);
    const q = await end(stack, quiet);
    assert.equal(q.output.by, null);
    assert.equal("claimed_by" in q.output, false);
    assert.deepEqual(
      (await timelineOf(stack, quiet)).map((e) => e.data),
      [{ step_id: "sign-off", approver: "anonymous", channel: "shared", decision: "reject", comment: null }],
    );
  });

  test("a named approver's link decides as that approver, whatever name the request gives", async () => {
    const id = await submit(stack, "test.named-approver");
    const step = await waitingStep(stack, id, "sign-off");
    assert.equal(step.approval_url, undefined, "no approver's link is handed out as the step's shared link");
    const own = step.approvals[0].approval_url;
    const r = await post(own, { decision: "approve", approver: "Head of Finance" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const t = await end(stack, id);
    assert.equal(t.output.by, "ana@acme.test");
    assert.equal("claimed_by" in t.output, false);
    assert.equal(t.steps[0].decisions[0].approver, "ana@acme.test");
    assert.equal("claimed_by" in t.steps[0].decisions[0], false);
    const [decided] = await timelineOf(stack, id);
    assert.equal(decided?.data.approver, "ana@acme.test");
    assert.equal("claimed_by" in decided!.data, false);
    assert.doesNotMatch(await page(own), /claimed/);
  });

  test("the approval page, and the page its form's post answers, carry the security headers", async () => {
    const id = await submit(stack, "demo.approval");
    const step = await waitingStep(stack, id, "approval");
    const form = (decision: string) =>
      fetch(step.approval_url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ decision }).toString(),
      });
    // The page, the page after a recorded decision, and the page after a refused one.
    for (const r of [await fetch(step.approval_url), await form("approve"), await form("reject")]) {
      assert.equal(r.status, 200);
      assert.match(r.headers.get("content-type") ?? "", /^text\/html/);
      assert.equal(r.headers.get("x-content-type-options"), "nosniff");
      assert.equal(r.headers.get("x-frame-options"), "DENY");
      assert.equal(r.headers.get("referrer-policy"), "no-referrer");
      assert.equal(r.headers.get("cache-control"), "no-store");
      const csp = (r.headers.get("content-security-policy") ?? "").split(/;\s*/);
      for (const directive of [
        "default-src 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
      ]) {
        assert.ok(csp.includes(directive), `${directive} in ${csp.join("; ")}`);
      }
      await r.text();
    }
  });

  test("the approval page shows no task input unless the step opts in", async () => {
    const id = await submit(stack, "demo.approval", { secret_note: "do-not-show-SECRET" });
    const step = await waitingStep(stack, id, "approval");
    const html = await page(step.approval_url);
    assert.doesNotMatch(html, /SECRET/);
  });
});

test("an approval stored with quorum 2 and no approvers is decided without a crash", () => {
  const config = {
    approvers: [],
    quorum: 2,
    onTimeout: null,
    title: null,
    description: null,
    remindAfterMs: null,
    escalateAfterMs: null,
    escalateTo: [],
  };
  const d = (approver: string, decision: "approve" | "reject") => ({ approver, decision, comment: null });
  assert.equal(approvalOutcome(config, [d("a", "approve")]), null);
  // No named approvers: the names are what the links' holders typed, so claims.
  assert.deepEqual(approvalOutcome(config, [d("a", "approve"), d("b", "approve")]), {
    approved: true,
    by: null,
    claimed_by: "b",
    comment: null,
  });
  assert.deepEqual(approvalOutcome(config, [d("a", "approve"), d("b", "reject")]), {
    approved: false,
    by: null,
    claimed_by: "b",
    comment: null,
  });
});

test("the timeline shows a step.decided event stored before claims as a claim, from its step's approvers", () => {
  const config = (approvers: string[]): ApprovalConfig => ({
    approvers,
    quorum: 1,
    onTimeout: null,
    title: null,
    description: null,
    remindAfterMs: null,
    escalateAfterMs: null,
    escalateTo: [],
  });
  const step = (stepId: string, approvers: string[]) =>
    ({ stepId, kind: "approval", config: config(approvers) }) as unknown as StepRow;
  const event = (seq: number, data: Record<string, unknown>): TaskEventRow => ({
    seq,
    tenantId: "tn_1",
    taskId: "t_1",
    type: "step.decided",
    data,
    createdAt: 0,
  });
  // As they were written before: the typed name as the approver.
  const rows = [
    event(1, { step_id: "open", approver: "Head of Finance", decision: "approve", comment: null }),
    event(2, { step_id: "named", approver: "ana", decision: "reject", comment: "no" }),
    event(3, { step_id: "open", approver: "anonymous", decision: "approve", comment: null }),
  ];
  const shown = timelineEvents(rows, [step("open", []), step("named", ["ana"])]).map((e) => e.data);
  assert.deepEqual(shown, [
    {
      step_id: "open",
      approver: "anonymous",
      claimed_by: "Head of Finance",
      decision: "approve",
      comment: null,
    },
    { step_id: "named", approver: "ana", decision: "reject", comment: "no" },
    { step_id: "open", approver: "anonymous", decision: "approve", comment: null },
  ]);
});
