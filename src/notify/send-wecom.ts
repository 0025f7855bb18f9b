import { errorInfo } from "../core/errors.ts";
import type { WecomTarget } from "../core/notification.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import { type ApprovalMessage, fieldText, leadLine } from "./message.ts";
import { postJson, redacted } from "./post-json.ts";

/** WeCom's markdown takes at most 4096 bytes of UTF-8. */
const MAX_MARKDOWN_BYTES = 4096;

/**
 * The body a WeCom (企业微信) group robot takes at its webhook URL
 * (`POST …/cgi-bin/webhook/send?key=…`): `{"msgtype": "markdown", "markdown": {"content"}}`
 * with the links in markdown, or a `template_card` of `card_type` `text_notice` whose jump
 * list holds them.
 */
export function wecomBody(t: WecomTarget, m: ApprovalMessage): Record<string, unknown> {
  if (t.msgtype === "template_card") {
    return {
      msgtype: "template_card",
      template_card: {
        card_type: "text_notice",
        main_title: { title: leadLine(m).slice(0, 36), desc: (m.description ?? m.stepId).slice(0, 44) },
        horizontal_content_list: Object.entries(m.fields)
          .slice(0, 6)
          .map(([k, v]) => ({ keyname: k.slice(0, 5), value: fieldText(v).slice(0, 30) })),
        jump_list: [
          { type: 1, title: "Approve 批准", url: m.links.approve_url },
          { type: 1, title: "Reject 拒绝", url: m.links.reject_url },
        ],
        card_action: { type: 1, url: m.links.approval_url },
      },
    };
  }
  const lines = [`**${leadLine(m)}**`];
  if (m.description) lines.push(`> ${m.description}`);
  for (const [k, v] of Object.entries(m.fields))
    lines.push(`> ${k}: <font color="comment">${fieldText(v)}</font>`);
  lines.push(`[Approve 批准](${m.links.approve_url})　[Reject 拒绝](${m.links.reject_url})`);
  lines.push(`[Review 查看](${m.links.approval_url})`);
  if (m.approver) lines.push(`For ${m.approver}`);
  if (m.deadline) lines.push(`Before ${m.deadline}`);
  let content = lines.join("\n");
  while (Buffer.byteLength(content, "utf8") > MAX_MARKDOWN_BYTES) content = content.slice(0, -64);
  return { msgtype: "markdown", markdown: { content } };
}

/** Posts to the robot. It answers 200 with `errcode` 0 when it took the message, another code otherwise. */
export function sendWecom(t: WecomTarget, m: ApprovalMessage, outbound: OutboundSettings) {
  return postJson(t.webhook_url, wecomBody(t, m), {}, outbound, (answer) => {
    let code: unknown;
    try {
      code = (JSON.parse(answer.snippet) as { errcode?: unknown }).errcode;
    } catch {
      code = undefined;
    }
    if (code === 0) return { ok: true };
    return {
      ok: false,
      retry: true,
      error: errorInfo("NOTIFY_FAILED", `${redacted(t.webhook_url)} answered errcode ${String(code)}`),
    };
  });
}
