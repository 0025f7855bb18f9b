import assert from "node:assert/strict";
import { test } from "node:test";
import {
  canMoveNotification,
  emailRecipients,
  notificationMoves,
  notificationStates,
  notifyProblem,
  owedMessages,
  shownRecipient,
} from "../src/core/notification.ts";
import type { ApprovalMessage } from "../src/notify/message.ts";
import { wecomBody } from "../src/notify/send-wecom.ts";
import { notifySettings } from "../src/notify/settings.ts";

// The rules of approvals' messages, without I/O: which messages are owed, where an email goes,
// what a channel list may hold, and the states a message moves through.

const ctx = {
  notifiers: { finance: { channel: "email" as const, to: "finance@acme.test" } },
  webhookSecret: true,
};

test("one message per channel and named approver; the step's links once per channel without approvers", () => {
  const entries = [{ channel: "email" as const }, "finance"];
  assert.deepEqual(
    owedMessages(entries, ["a@x.test", "b@x.test"], "request").map((m) => [m.entry, m.approver]),
    [
      [0, "a@x.test"],
      [0, "b@x.test"],
      [1, "a@x.test"],
      [1, "b@x.test"],
    ],
  );
  assert.deepEqual(
    owedMessages(entries, [], "reminder").map((m) => [m.entry, m.approver, m.reason]),
    [
      [0, null, "reminder"],
      [1, null, "reminder"],
    ],
  );
});

test("an email goes to the approver's own address, or the one mapped to them; never to a shared one", () => {
  assert.deepEqual(emailRecipients({ channel: "email" }, "a@x.test"), ["a@x.test"]);
  assert.match(String(emailRecipients({ channel: "email" }, "ana")), /not an email address/);
  assert.deepEqual(emailRecipients({ channel: "email", to: { ana: "ana@x.test" } }, "ana"), ["ana@x.test"]);
  assert.match(String(emailRecipients({ channel: "email", to: "team@x.test" }, "ana")), /map each approver/);
  assert.deepEqual(emailRecipients({ channel: "email", to: "team@x.test" }, null), ["team@x.test"]);
});

test("a channel list is checked, each problem naming its option", () => {
  const cases: [unknown, RegExp | null][] = [
    [[{ channel: "email" }, "finance", { notifier: "finance" }], null],
    [{ channel: "email" }, /notify must be a list/],
    [[{ channel: "sms" }], /notify\[0\]\.channel is "sms"; the channels are email, slack, wecom, webhook/],
    [[{ channel: "email", to: ["ok@x.test", "nope"] }], /notify\[0\]\.to holds "nope"/],
    [[{ channel: "slack" }], /notify\[0\] needs exactly one of webhook_url and channel_id/],
    [[{ channel: "wecom", webhook_url: "ftp://x" }], /notify\[0\]\.webhook_url/],
    [
      [{ channel: "webhook", url: "https://x.test", secret: "whsec_x" }],
      /secret may only be set in a configured notifier/,
    ],
    [[{ channel: "email", cc: "x" }], /notify\[0\]\.cc is not a field of a email channel/],
    [
      ["payroll"],
      /notify\[0\] names the notifier "payroll", which the config does not define \(it defines finance\)/,
    ],
  ];
  for (const [notify, problem] of cases) {
    const got = notifyProblem(notify, "notify", ctx);
    if (problem === null) assert.equal(got, null);
    else assert.match(String(got), problem, JSON.stringify(notify));
  }
  assert.match(
    String(
      notifyProblem([{ channel: "webhook", url: "https://x.test" }], "notify", {
        notifiers: {},
        webhookSecret: false,
      }),
    ),
    /no signing secret/,
  );
});

test("a message only moves forward; a dead one back to pending by a replay alone", () => {
  for (const from of notificationStates) {
    for (const to of notificationStates) {
      const allowed = (notificationMoves[from] as readonly string[]).includes(to);
      assert.equal(canMoveNotification(from, to), allowed);
    }
  }
  assert.deepEqual(notificationMoves.sent, []);
  assert.deepEqual(notificationMoves.failed, []);
  assert.deepEqual(notificationMoves.dead, ["pending"]);
});

test("the view never shows a URL's path, where a Slack or WeCom webhook keeps its key", () => {
  assert.equal(
    shownRecipient(
      { channel: "wecom", webhook_url: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=s3cret" },
      null,
    ),
    "qyapi.weixin.qq.com",
  );
  assert.equal(shownRecipient({ channel: "slack", channel_id: "C01" }, "a"), "C01");
  assert.equal(shownRecipient({ notifier: "finance", channel: "email" }, "a"), "finance");
});

test("the config's notifiers are checked at start, naming the key", () => {
  assert.throws(() => notifySettings({}, { ops: { channel: "fax" } }), /notifiers\.ops.*channel/);
  assert.throws(
    () => notifySettings({}, { ops: { channel: "email", to: "x" } }),
    /notifiers\.ops.*not an email address/,
  );
  assert.throws(() => notifySettings({ webhook_secret: "plain" }), /notify\.webhook_secret/);
  assert.throws(
    () => notifySettings({ smtp: { hots: "x", from: "a@x.test" } } as never),
    /notify\.smtp\.hots is not a key of notify\.smtp/,
  );
  const s = notifySettings(
    { webhook_secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
    { hook: { channel: "webhook", url: "https://x.test", secret: "whsec_abc" } },
  );
  assert.equal(s.notifiers.hook?.channel, "webhook");
});

test("a WeCom template_card is a text_notice whose jump list holds the approve and reject links", () => {
  const m: ApprovalMessage = {
    taskId: "t_1",
    taskType: "pay",
    stepId: "ok",
    reason: "request",
    title: "Pay invoice",
    description: null,
    fields: { amount: 12 },
    approver: "a@x.test",
    links: { approval_url: "https://l/d", approve_url: "https://l/a", reject_url: "https://l/r" },
    deadline: null,
  };
  const card = wecomBody({ channel: "wecom", webhook_url: "https://x", msgtype: "template_card" }, m) as any;
  assert.equal(card.msgtype, "template_card");
  assert.equal(card.template_card.card_type, "text_notice");
  assert.deepEqual(
    card.template_card.jump_list.map((j: { url: string }) => j.url),
    ["https://l/a", "https://l/r"],
  );
  assert.equal(card.template_card.card_action.url, "https://l/d");
  const md = wecomBody(
    { channel: "wecom", webhook_url: "https://x" },
    { ...m, description: "x".repeat(10_000) },
  ) as any;
  assert.ok(Buffer.byteLength(md.markdown.content) <= 4096);
});
