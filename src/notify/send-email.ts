import type { Transporter } from "nodemailer";
import { errorInfo } from "../core/errors.ts";
import { type ApprovalMessage, fieldText, leadLine, plainText } from "./message.ts";
import type { SendOutcome } from "./send-outcome.ts";
import type { NotifySettings } from "./settings.ts";

/** Text as HTML: the five characters that could open markup or end an attribute, escaped. */
const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

/** The HTML part: the same facts as the text part, with the links as buttons. */
export function emailHtml(m: ApprovalMessage): string {
  const fields = Object.entries(m.fields)
    .map(([k, v]) => `<tr><th align="left">${esc(k)}</th><td>${esc(fieldText(v))}</td></tr>`)
    .join("");
  const button = (href: string, label: string, color: string) =>
    `<a href="${esc(href)}" style="display:inline-block;padding:8px 16px;margin-right:8px;color:#fff;background:${color};text-decoration:none;border-radius:4px">${label}</a>`;
  return `<!doctype html><html><body style="font-family:sans-serif">
<h2>${esc(leadLine(m))}</h2>
${m.description ? `<p>${esc(m.description)}</p>` : ""}
${fields ? `<table>${fields}</table>` : ""}
<p>${button(m.links.approve_url, "Approve", "#1a7f37")}${button(m.links.reject_url, "Reject", "#cf222e")}</p>
<p><a href="${esc(m.links.approval_url)}">Review and comment</a></p>
${m.deadline ? `<p>Decide before ${esc(m.deadline)}.</p>` : ""}
<p style="color:#666">Task ${esc(m.taskId)}, step ${esc(m.stepId)}${m.approver ? `, for ${esc(m.approver)}` : ""}.</p>
</body></html>`;
}

/** One SMTP transport per settings: nodemailer keeps no connection open between messages by default. */
const transports = new WeakMap<object, Transporter>();

/** nodemailer is loaded with the first email, so a deployment that sends none never loads it. */
async function transportOf(smtp: NonNullable<NotifySettings["smtp"]>): Promise<Transporter> {
  let t = transports.get(smtp);
  if (!t) {
    const { createTransport } = await import("nodemailer");
    t = createTransport({
      host: smtp.host,
      port: smtp.port ?? (smtp.secure ? 465 : 587),
      secure: smtp.secure === true,
      ...(smtp.user === undefined ? {} : { auth: { user: smtp.user, pass: smtp.pass ?? "" } }),
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    });
    transports.set(smtp, t);
  }
  return t;
}

/**
 * Sends one approval email with a text and an HTML part. A permanent refusal (a 5xx reply,
 * such as an unknown mailbox) fails the message; anything else is retried.
 */
export async function sendEmail(
  m: ApprovalMessage,
  to: string[],
  s: NotifySettings,
  id: string,
): Promise<SendOutcome> {
  if (!s.smtp) {
    return {
      ok: false,
      retry: false,
      error: errorInfo(
        "NOTIFY_FAILED",
        "No mail server is configured (notify.smtp), so email cannot be sent.",
      ),
    };
  }
  try {
    await (await transportOf(s.smtp)).sendMail({
      from: s.smtp.from,
      to,
      subject: leadLine(m),
      text: plainText(m),
      html: emailHtml(m),
      // The same id on every attempt, so a receiving system can tell a retry from a new message.
      messageId: `<${id}@longhaul>`,
    });
    return { ok: true };
  } catch (err) {
    const e = err as { responseCode?: number; message?: string };
    const permanent = typeof e.responseCode === "number" && e.responseCode >= 500;
    return {
      ok: false,
      retry: !permanent,
      error: errorInfo(
        "NOTIFY_FAILED",
        `The mail server refused the message: ${String(e.message ?? err).slice(0, 300)}`,
      ),
    };
  }
}
