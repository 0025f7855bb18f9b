import { errorInfo } from "../core/errors.ts";
import type { SlackTarget } from "../core/notification.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import { type ApprovalMessage, fieldText, leadLine, plainText } from "./message.ts";
import { postJson } from "./post-json.ts";
import type { NotifySettings } from "./settings.ts";

/** The token at the end of an approval link: what a Slack button carries back when clicked. */
export const linkToken = (url: string): string => url.slice(url.lastIndexOf("/") + 1);

/** The `block_id` of the buttons: which task and step they decide, checked against the token on a click. */
export const slackBlockId = (taskId: string, stepId: string): string => `longhaul:${taskId}:${stepId}`;

/**
 * A Block Kit message: what is asked, the shown fields, and approve and reject buttons whose
 * values are the approver's one-click tokens. A click comes back to
 * `POST /v1/slack/interactions`, which decides as the Slack user who clicked.
 */
export function slackBody(m: ApprovalMessage): Record<string, unknown> {
  const fields = Object.entries(m.fields)
    .slice(0, 10)
    .map(([k, v]) => ({ type: "mrkdwn", text: `*${k}*\n${fieldText(v).slice(0, 1900)}` }));
  const blocks: Record<string, unknown>[] = [
    {
      type: "section",
      text: {
        type: "mrkdwn",
        text: `*${leadLine(m)}*${m.description ? `\n${m.description}` : ""}${m.approver ? `\nFor ${m.approver}` : ""}`.slice(
          0,
          3000,
        ),
      },
    },
  ];
  if (fields.length > 0) blocks.push({ type: "section", fields });
  blocks.push({
    type: "actions",
    block_id: slackBlockId(m.taskId, m.stepId),
    elements: [
      {
        type: "button",
        action_id: "approve",
        style: "primary",
        text: { type: "plain_text", text: "Approve" },
        value: linkToken(m.links.approve_url),
      },
      {
        type: "button",
        action_id: "reject",
        style: "danger",
        text: { type: "plain_text", text: "Reject" },
        value: linkToken(m.links.reject_url),
      },
    ],
  });
  blocks.push({
    type: "context",
    elements: [
      {
        type: "mrkdwn",
        text: `<${m.links.approval_url}|Review and comment>${m.deadline ? ` · decide before ${m.deadline}` : ""}`,
      },
    ],
  });
  return { text: plainText(m).slice(0, 3000), blocks };
}

/**
 * Posts to an incoming webhook (it answers 200 `ok`), or to a channel through
 * `chat.postMessage` with the bot token (it answers 200 with `"ok": false` on an error).
 */
export function sendSlack(t: SlackTarget, m: ApprovalMessage, s: NotifySettings, outbound: OutboundSettings) {
  const body = slackBody(m);
  if (t.webhook_url !== undefined) return postJson(t.webhook_url, body, {}, outbound);
  if (s.slack.botToken === null) {
    return Promise.resolve({
      ok: false as const,
      retry: false,
      error: errorInfo("NOTIFY_FAILED", "A Slack channel_id needs notify.slack.bot_token in the config."),
    });
  }
  return postJson(
    `${s.slack.apiUrl}/chat.postMessage`,
    { channel: t.channel_id, ...body },
    { authorization: `Bearer ${s.slack.botToken}` },
    outbound,
    (answer) => {
      let said: { ok?: unknown; error?: unknown } = {};
      try {
        said = JSON.parse(answer.snippet) as typeof said;
      } catch {
        // An answer cut at the snippet's length: a successful one starts with "ok": true.
        if (/^\s*\{\s*"ok"\s*:\s*true/.test(answer.snippet)) return { ok: true };
      }
      if (said.ok === true) return { ok: true };
      return {
        ok: false,
        retry: said.error === "ratelimited" || said.error === undefined,
        error: errorInfo("NOTIFY_FAILED", `Slack refused the message: ${String(said.error ?? "no answer")}`),
      };
    },
  );
}
