import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { type ApprovalConfig, decisionIdentity } from "../src/core/wait.ts";
import { defineTask } from "../src/index.ts";
import { type Stack, startStack } from "./stack.ts";
import { end, waitingStep } from "./task-waits.ts";

// Who decided an approval is known: a named approver only through their own links, a shared
// link only when the step allows one (and then anonymous), never the task's own requester,
// and decisions through the API recorded with the key and the user it names.

const approvers = ["dana@acme.test", "erin@acme.test"];
const pair = defineTask("id.pair", async (_input, step) => step.approval("ok", { approvers }));
const shared = defineTask("id.shared", async (_input, step) =>
  step.approval("ok", { approvers, allowShared: true }),
);
const selfOk = defineTask("id.self-ok", async (_input, step) =>
  step.approval("ok", { approvers, allowSelfApproval: true }),
);

const post = async (url: string, body: unknown) => {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "user-agent": "identity-test/1" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
};

describe("approval identity over HTTP", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ taskTypes: [pair, shared, selfOk] });
  });
  after(() => stack.close());

  const submit = async (type: string, userId?: string) => {
    const r = await stack.api("/v1/tasks", {
      body: { type, input: {}, ...(userId ? { user_id: userId } : {}) },
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.task_id as string;
  };
  const linkOf = (step: { approvals: { approver: string; approval_url: string }[] }, who: string) =>
    step.approvals.find((l) => l.approver === who)!.approval_url;

  test("named approvers: no shared link; each decides through their own as themselves", async () => {
    const id = await submit("id.pair");
    const step = await waitingStep(stack, id, "ok");
    assert.equal(step.approval_url, undefined);
    assert.deepEqual(
      step.approvals.map((l: { approver: string; status: string }) => [l.approver, l.status]),
      [
        ["dana@acme.test", "pending"],
        ["erin@acme.test", "pending"],
      ],
    );
    // The attack of the issue: a name in the body of dana's link changes nothing.
    const r = await post(linkOf(step, "dana@acme.test"), {
      decision: "approve",
      approver: "mallory@evil.test",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const t = await end(stack, id);
    assert.equal(t.output.by, "dana@acme.test");
    const [d] = t.steps[0].decisions;
    assert.equal(d.approver, "dana@acme.test");
    assert.equal(d.channel, "link");
    assert.equal("claimed_by" in d, false);
    assert.equal(d.user_agent, "identity-test/1");
    assert.ok(d.address, "the request's address is kept");
  });

  test("allowShared: the shared link decides as anonymous, a typed name only a claim", async () => {
    const id = await submit("id.shared");
    const step = await waitingStep(stack, id, "ok");
    assert.ok(step.approval_url, "a shared link when the step asks for one");
    assert.notEqual(step.approval_url, linkOf(step, "dana@acme.test"));
    const r = await post(step.approval_url, { decision: "approve", approver: "dana@acme.test" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const t = await end(stack, id);
    assert.equal(t.output.by, null, "nobody longhaul knows decided");
    assert.equal(t.output.claimed_by, "dana@acme.test");
    const [d] = t.steps[0].decisions;
    assert.equal(d.approver, "anonymous");
    assert.equal(d.claimed_by, "dana@acme.test");
    assert.equal(d.channel, "shared");
  });

  test("the requester cannot approve their own task: 403 SELF_APPROVAL; another approver can", async () => {
    const id = await submit("id.pair", "Dana@Acme.test");
    const step = await waitingStep(stack, id, "ok");
    const mine = await post(linkOf(step, "dana@acme.test"), { decision: "approve" });
    assert.equal(mine.status, 403);
    assert.equal(mine.body.error.code, "SELF_APPROVAL");
    const api = await stack.api(`/v1/tasks/${id}/approvals/ok`, {
      body: { decision: "approve", approver: "erin@acme.test", user_id: "dana@acme.test" },
    });
    assert.equal(api.status, 403, "nor through the API, for whichever approver");
    assert.equal(api.body.error.code, "SELF_APPROVAL");
    assert.equal((await post(linkOf(step, "erin@acme.test"), { decision: "approve" })).status, 200);
    const t = await end(stack, id);
    assert.equal(t.output.by, "erin@acme.test");
    assert.equal(t.steps[0].decisions.length, 1, "the refused decisions left nothing");
  });

  test("allowSelfApproval lets the requester decide", async () => {
    const id = await submit("id.self-ok", "dana@acme.test");
    const step = await waitingStep(stack, id, "ok");
    assert.equal((await post(linkOf(step, "dana@acme.test"), { decision: "approve" })).status, 200);
    assert.equal((await end(stack, id)).output.by, "dana@acme.test");
  });

  test("through the API: recorded with the key, the user and the channel; checked like links", async () => {
    const id = await submit("id.pair");
    await waitingStep(stack, id, "ok");
    const stranger = await stack.api(`/v1/tasks/${id}/approvals/ok`, {
      body: { decision: "approve", approver: "mallory@evil.test" },
    });
    assert.equal(stranger.status, 400);
    assert.equal(stranger.body.error.code, "VALIDATION_FAILED");
    assert.equal(stranger.body.error.param, "approver");
    const bad = await stack.api(`/v1/tasks/${id}/approvals/ok`, { body: { decision: "maybe" } });
    assert.equal(bad.status, 400);
    const noStep = await stack.api(`/v1/tasks/${id}/approvals/nope`, { body: { decision: "approve" } });
    assert.equal(noStep.status, 404);

    // Another tenant's key sees no such task.
    const otherKey = newApiKey();
    await stack.store.createTenant({ name: "other", keyHash: hashApiKey(otherKey) });
    const other = await fetch(`${stack.url}/v1/tasks/${id}/approvals/ok`, {
      method: "POST",
      headers: { authorization: `Bearer ${otherKey}`, "content-type": "application/json" },
      body: JSON.stringify({ decision: "approve", approver: "erin@acme.test" }),
    });
    assert.equal(other.status, 404);
    assert.equal(((await other.json()) as { error: { code: string } }).error.code, "TASK_NOT_FOUND");

    const ok = await stack.api(`/v1/tasks/${id}/approvals/ok`, {
      body: { decision: "approve", approver: "erin@acme.test", user_id: "u-77", comment: "via our UI" },
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.deepEqual(ok.body, { accepted: true, task_id: id, step_id: "ok", decision: "approve" });
    const again = await stack.api(`/v1/tasks/${id}/approvals/ok`, {
      body: { decision: "reject", approver: "erin@acme.test" },
    });
    assert.equal(again.status, 409, "the step has ended");
    const t = await end(stack, id);
    assert.equal(t.output.by, "erin@acme.test");
    const [d] = t.steps[0].decisions;
    assert.equal(d.channel, "api");
    assert.match(d.key_id, /^key_/);
    assert.equal(d.user_id, "u-77");
    assert.equal(d.comment, "via our UI");
  });

  test("a graph approval node takes allowShared and refuses a non-boolean at submit", async () => {
    const graph = (allowShared: unknown) => ({
      nodes: [{ id: "ok", kind: "approval", with: { approvers, allowShared } }],
    });
    const bad = await stack.api("/v1/tasks", { body: { type: "graph", input: graph("yes") } });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body), /allowShared/);
    const good = await stack.api("/v1/tasks", { body: { type: "graph", input: graph(true) } });
    assert.equal(good.status, 202, JSON.stringify(good.body));
    const step = await waitingStep(stack, good.body.task_id, "ok");
    assert.ok(step.approval_url);
  });
});

describe("decisionIdentity", () => {
  const config = (o: Partial<ApprovalConfig> = {}): ApprovalConfig => ({
    approvers,
    quorum: 1,
    onTimeout: null,
    title: null,
    description: null,
    remindAfterMs: null,
    escalateAfterMs: null,
    escalateTo: [],
    ...o,
  });
  test("a link naming nobody on a step with named approvers is refused unless shared links are allowed", () => {
    const d = { approver: null, claimedBy: "dana@acme.test", channel: "shared" as const };
    assert.equal(decisionIdentity(config(), null, d), "shared_not_allowed");
    assert.deepEqual(decisionIdentity(config({ allowShared: true }), null, d), {
      approver: "anonymous",
      claimedBy: "dana@acme.test",
    });
  });
  test("a claimed name equal to the requester is refused too", () => {
    const d = { approver: null, claimedBy: " DANA@acme.test ", channel: "shared" as const };
    assert.equal(decisionIdentity(config({ allowShared: true }), "dana@acme.test", d), "self_approval");
  });
  test("on an approval without named approvers the typed name stays the row's approver, as before", () => {
    const anon = config({ approvers: [] });
    assert.deepEqual(decisionIdentity(anon, null, { approver: null, claimedBy: "x", channel: "shared" }), {
      approver: "x",
      claimedBy: "x",
    });
    assert.deepEqual(decisionIdentity(anon, null, { approver: null, channel: "shared" }), {
      approver: "anonymous",
      claimedBy: null,
    });
  });
});
