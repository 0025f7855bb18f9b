import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { LonghaulClient } from "../src/client/index.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask } from "../src/index.ts";
import { signSlack } from "../src/ingress/slack.ts";
import { waitFor } from "./helpers.ts";
import { decodeQuotedPrintable, startReceiver, startSmtpSink } from "./notify-sinks.ts";
import { type Stack, startStack } from "./stack.ts";
import { end, get, waitingStep } from "./task-waits.ts";

// Notify, then wait: an approval's messages are owed with its wait, carry each approver's own
// links, go out on webhook, email and WeCom channels through the outbox, and those links decide.

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const approvers = ["dana@acme.test", "erin@acme.test"];
const SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";

/** A Slack interactivity request as Slack sends it: form-encoded, signed over its raw bytes. */
const slackClick = async (
  url: string,
  payload: unknown,
  secret = SLACK_SECRET,
): Promise<{ status: number; body: any }> => {
  const body = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
  const timestampS = Math.floor(Date.now() / 1000);
  const res = await fetch(`${url}/v1/slack/interactions`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-slack-request-timestamp": String(timestampS),
      "x-slack-signature": signSlack({ timestampS, body, secret }),
    },
    body,
  });
  return { status: res.status, body: await res.json() };
};

const post = async (url: string, body: unknown = {}) => {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};

describe("approval notifications over HTTP", () => {
  let stack: Stack;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
  const emailTask = defineTask("notify.email", async (_input, step) =>
    step.approval("ok", {
      approvers,
      notify: [{ channel: "email" }],
      title: "Pay invoice",
      show: ["amount"],
    }),
  );
  const wecomTask = defineTask("notify.wecom", async (_input, step) =>
    step.approval("ok", { approvers: ["dana@acme.test"], notify: ["team-robot"] }),
  );
  const slackTask = defineTask("notify.slack", async (_input, step) =>
    step.approval("ok", { approvers, notify: [{ channel: "slack", webhook_url: `${receiver.url}/slack` }] }),
  );
  const slackChannel = defineTask("notify.slack-channel", async (_input, step) =>
    step.approval("ok", {
      approvers: ["dana@acme.test"],
      notify: [{ channel: "slack", channel_id: "C0APPROVALS" }],
    }),
  );
  const refused = defineTask("notify.refused", async (_input, step) =>
    step.approval("ok", { approvers: ["gone@acme.test"], notify: [{ channel: "email" }, "busy-robot"] }),
  );
  const unknownNotifier = defineTask("notify.unknown", async (_input, step) =>
    step.approval("ok", { approvers, notify: ["nobody"] }),
  );
  before(async () => {
    receiver = await startReceiver((r) => {
      if (r.path.startsWith("/fail")) return { status: 500 };
      // WeCom answers 200 with another errcode when it does not take the message (45009: over its rate).
      if (r.path === "/slackapi/chat.postMessage") return { status: 200, body: '{"ok":true,"ts":"1.2"}' };
      if (r.path.startsWith("/busy"))
        return { status: 200, body: '{"errcode":45009,"errmsg":"api freq out of limit"}' };
      return { status: 200, body: '{"errcode":0,"errmsg":"ok"}' };
    });
    smtp = await startSmtpSink({ refuse: (to) => to.startsWith("gone@") });
    stack = await startStack({
      taskTypes: [emailTask, wecomTask, slackTask, slackChannel, refused, unknownNotifier],
      outbound: { allow_private_networks: true, retry_schedule_s: [0, 0.05, 0.05] },
      notify: {
        webhook_secret: SECRET,
        smtp: { host: "127.0.0.1", port: smtp.port, from: "Approvals <approvals@longhaul.test>" },
        slack: {
          signing_secrets: [SLACK_SECRET],
          bot_token: "xoxb-test-token",
          api_url: `${receiver.url}/slackapi`,
          users: { U_DANA: "dana@acme.test", erin: "erin@acme.test" },
        },
      },
      notifiers: {
        "team-robot": { channel: "wecom", webhook_url: `${receiver.url}/cgi-bin/webhook/send?key=robot-key` },
        "busy-robot": {
          channel: "wecom",
          webhook_url: `${receiver.url}/busy/cgi-bin/webhook/send?key=busy-key`,
        },
      },
    });
  });
  after(async () => {
    await stack.close();
    await receiver.close();
    await smtp.close();
  });

  const submitGraph = async (w: Record<string, unknown>) => {
    const r = await stack.api("/v1/tasks", {
      body: {
        type: "graph",
        input: { input: { amount: 1200 }, nodes: [{ id: "review", kind: "approval", with: w }] },
      },
    });
    return r;
  };

  test("a graph approval posts one signed message per approver, each with their own links; they decide", async () => {
    const r = await submitGraph({
      approvers,
      show: ["amount"],
      notify: [{ channel: "webhook", url: `${receiver.url}/approvals` }],
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.task_id as string;
    const mine = () => receiver.hits.filter((h) => h.path === "/approvals" && h.body.includes(id));
    await waitFor(() => (mine().length === 2 ? true : null), 30_000, "two messages");
    const wh = new Webhook(SECRET);
    const bodies = mine().map((h) => {
      const verified = wh.verify(h.body, {
        "webhook-id": String(h.headers["webhook-id"]),
        "webhook-timestamp": String(h.headers["webhook-timestamp"]),
        "webhook-signature": String(h.headers["webhook-signature"]),
      }) as any;
      assert.equal(verified.type, "approval.requested");
      return verified.data;
    });
    assert.deepEqual(bodies.map((b) => b.approver).sort(), approvers);
    assert.deepEqual(bodies[0].show, { amount: 1200 });
    const step = await waitingStep(stack, id, "review");
    for (const b of bodies) {
      const own = step.approvals.find((a: { approver: string }) => a.approver === b.approver);
      assert.equal(b.links.approve_url, own.approve_url, "the message holds that approver's own link");
    }
    const erin = bodies.find((b) => b.approver === "erin@acme.test")!;
    assert.equal((await post(erin.links.approve_url)).status, 200);
    const t = await end(stack, id);
    assert.equal(t.status, "succeeded");
    assert.equal(t.output.nodes.review.by, "erin@acme.test");
    const s = t.steps.find((x: { id: string }) => x.id === "review");
    assert.deepEqual(
      s.notifications.map((n: any) => [n.channel, n.approver, n.status, n.attempts, n.to]).sort(),
      [
        ["webhook", "dana@acme.test", "sent", 1, new URL(receiver.url).host],
        ["webhook", "erin@acme.test", "sent", 1, new URL(receiver.url).host],
      ],
    );
    assert.equal(s.decisions[0].channel, "link");
    // The timeline shows each message.
    const timeline = await stack.api(`/v1/tasks/${id}/timeline`);
    const sent = timeline.body.entries.filter((e: any) => e.type === "notification.sent");
    assert.deepEqual(sent.map((e: any) => e.data.approver).sort(), approvers);
  });

  test("a failing receiver is retried, then dead, shown on the step, and replayed", async () => {
    const r = await submitGraph({
      approvers: ["dana@acme.test"],
      notify: [{ channel: "webhook", url: `${receiver.url}/fail` }],
    });
    const id = r.body.task_id as string;
    const step = await waitFor(
      async () => {
        const s = (await get(stack, id)).steps.find((x: any) => x.id === "review");
        return s?.notifications?.[0]?.status === "dead" ? s : null;
      },
      30_000,
      "the message to be dead",
    );
    const n = step.notifications[0];
    assert.equal(n.attempts, 3);
    assert.equal(n.last_error.code, "HTTP_STATUS");
    // Another tenant's key sees no such notification.
    const otherKey = newApiKey();
    await stack.store.createTenant({ name: "other", keyHash: hashApiKey(otherKey) });
    const other = await fetch(`${stack.url}/v1/tasks/${id}/notifications/${n.id}/replay`, {
      method: "POST",
      headers: { authorization: `Bearer ${otherKey}`, "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(other.status, 404);
    const client = new LonghaulClient({ baseUrl: stack.url, apiKey: stack.key });
    const again = await client.replayNotification(id, n.id);
    assert.equal(again.status, "pending");
    assert.equal(again.id, n.id);
    const twice = await stack.api(`/v1/tasks/${id}/notifications/${n.id}/replay`, { body: {} });
    assert.equal(twice.status, 409);
    assert.equal(twice.body.error.code, "NOTIFICATION_NOT_REPLAYABLE");
  });

  test("by email: each approver gets a text and an HTML part with working links", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "notify.email", input: { amount: 99 } } });
    const id = r.body.task_id as string;
    const mails = () => smtp.mails.filter((m) => m.raw.includes(id));
    await waitFor(() => (mails().length === 2 ? true : null), 30_000, "two emails");
    assert.deepEqual(
      mails()
        .map((m) => m.to[0])
        .sort(),
      approvers,
    );
    const dana = mails().find((m) => m.to[0] === "dana@acme.test")!;
    assert.match(dana.raw, /text\/plain/);
    assert.match(dana.raw, /text\/html/);
    const text = decodeQuotedPrintable(dana.raw);
    assert.match(text, /Pay invoice/);
    assert.match(text, /amount: 99/);
    const approve = /Approve: (\S+)/.exec(text)![1]!;
    assert.equal((await post(approve)).status, 200);
    const t = await end(stack, id);
    assert.equal(t.output.by, "dana@acme.test");
  });

  test("a WeCom robot gets a markdown message in its documented shape, through a named notifier", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "notify.wecom", input: {} } });
    const id = r.body.task_id as string;
    const hit = await waitFor(
      () =>
        receiver.hits.find(
          (h) => h.path === "/cgi-bin/webhook/send?key=robot-key" && h.body.includes("Approve"),
        ) ?? null,
      30_000,
      "the robot's message",
    );
    const body = JSON.parse(hit.body);
    assert.equal(body.msgtype, "markdown");
    assert.equal(typeof body.markdown.content, "string");
    assert.ok(Buffer.byteLength(body.markdown.content) <= 4096);
    const link = /\[Approve 批准\]\(([^)]+)\)/.exec(body.markdown.content)![1]!;
    const s = (await get(stack, id)).steps[0];
    assert.equal(link, s.approvals[0].approve_url);
    await waitFor(
      async () => ((await get(stack, id)).steps[0].notifications?.[0]?.status === "sent" ? true : null),
      30_000,
      "sent",
    );
    const n = (await get(stack, id)).steps[0].notifications[0];
    assert.equal(n.channel, "wecom");
    assert.equal(n.to, "team-robot");
  });

  test("Slack: a Block Kit message per approver; a signed button click decides as the mapped user", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "notify.slack", input: {} } });
    const id = r.body.task_id as string;
    const mine = () => receiver.hits.filter((h) => h.path === "/slack" && h.body.includes(id));
    await waitFor(() => (mine().length === 2 ? true : null), 30_000, "two Slack messages");
    const buttons = (who: string) => {
      const m = JSON.parse(mine().find((h) => h.body.includes(`For ${who}`))!.body);
      const actions = m.blocks.find((b: any) => b.type === "actions");
      return {
        blockId: actions.block_id as string,
        approve: actions.elements[0],
        reject: actions.elements[1],
      };
    };
    const dana = buttons("dana@acme.test");
    assert.equal(dana.approve.action_id, "approve");
    const click = (user: Record<string, string>, b = dana, action = b.approve, blockId = b.blockId) => ({
      type: "block_actions",
      user,
      actions: [{ action_id: action.action_id, block_id: blockId, value: action.value }],
    });
    const forged = await slackClick(stack.url, click({ id: "U_DANA" }), "another-secret");
    assert.equal(forged.status, 401);
    const otherStep = await slackClick(
      stack.url,
      click({ id: "U_DANA" }, dana, dana.approve, `longhaul:${id}:other`),
    );
    assert.equal(otherStep.status, 400);
    assert.equal(otherStep.body.error.code, "VALIDATION_FAILED");
    const erinOnDanas = await slackClick(stack.url, click({ id: "U_ERIN", username: "erin" }));
    assert.equal(erinOnDanas.status, 403);
    assert.equal(erinOnDanas.body.error.code, "APPROVER_MISMATCH");
    const stranger = await slackClick(stack.url, click({ id: "U_NOBODY" }));
    assert.equal(stranger.status, 403);
    assert.equal(stranger.body.error.code, "APPROVER_MISMATCH");
    const ok = await slackClick(stack.url, click({ id: "U_DANA" }));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.approver, "dana@acme.test");
    const t = await end(stack, id);
    assert.equal(t.output.by, "dana@acme.test");
    const [d] = t.steps[0].decisions;
    assert.equal(d.channel, "slack");
    assert.equal(d.user_id, "U_DANA");
  });

  test("Slack by channel id: chat.postMessage with the bot token", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "notify.slack-channel", input: {} } });
    const id = r.body.task_id as string;
    const hit = await waitFor(
      () => receiver.hits.find((h) => h.path === "/slackapi/chat.postMessage" && h.body.includes(id)) ?? null,
      30_000,
      "the chat.postMessage call",
    );
    assert.equal(hit.headers.authorization, "Bearer xoxb-test-token");
    const body = JSON.parse(hit.body);
    assert.equal(body.channel, "C0APPROVALS");
    assert.ok(body.blocks.some((b: { type: string }) => b.type === "actions"));
    const n = await waitFor(
      async () => {
        const x = (await get(stack, id)).steps[0].notifications?.[0];
        return x?.status === "sent" ? x : null;
      },
      30_000,
      "sent",
    );
    assert.equal(n.to, "C0APPROVALS");
  });

  test("a mailbox the server refuses fails at once; a robot that answers another errcode is retried, then dead", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "notify.refused", input: {} } });
    const id = r.body.task_id as string;
    const ns = await waitFor(
      async () => {
        const n = (await get(stack, id)).steps[0].notifications ?? [];
        return n.length === 2 && n.every((x: { status: string }) => x.status !== "pending") ? n : null;
      },
      30_000,
      "both messages to give up",
    );
    const email = ns.find((n: { channel: string }) => n.channel === "email");
    assert.equal(email.status, "failed");
    assert.equal(email.attempts, 1);
    assert.equal(email.last_error.code, "NOTIFY_FAILED");
    const robot = ns.find((n: { channel: string }) => n.channel === "wecom");
    assert.equal(robot.status, "dead");
    assert.equal(robot.attempts, 3);
    assert.match(robot.last_error.message, /errcode 45009/);
    assert.doesNotMatch(robot.last_error.message, /busy-key/, "a webhook URL's key stays out of errors");
  });

  test("bad channels are refused at submit with a stable code naming the option", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ notify: [{ channel: "pager" }] }, /with\.notify\[0\]\.channel/],
      [
        { notify: [{ channel: "email", to: "not-an-address" }] },
        /with\.notify\[0\]\.to .*not an email address/,
      ],
      [
        { notify: ["finance"] },
        /with\.notify\[0\] names the notifier "finance", which the config does not define/,
      ],
      [
        { notify: [{ channel: "webhook", url: "http://x.test/", secret: "whsec_x" }] },
        /with\.notify\[0\]\.secret may only be set in a configured notifier/,
      ],
      [{ escalate: { to: "x" } }, /with\.escalate\.to/],
      [{ onTimeout: "later" }, /with\.onTimeout/],
    ];
    for (const [w, message] of cases) {
      const r = await submitGraph({ approvers, ...w });
      assert.equal(r.status, 400, JSON.stringify(w));
      assert.equal(r.body.error.code, "VALIDATION_FAILED");
      assert.match(r.body.error.message, message);
    }
  });

  test("a notifier the config does not define fails the step, naming the option", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "notify.unknown", input: {} } });
    const t = await end(stack, r.body.task_id);
    assert.equal(t.status, "failed");
    assert.equal(t.error.code, "VALIDATION_FAILED");
    assert.match(t.error.message, /notify\[0\] names the notifier "nobody"/);
  });
});
