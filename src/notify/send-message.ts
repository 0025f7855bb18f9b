import { errorInfo } from "../core/errors.ts";
import { emailRecipients, type NotifyEntry, resolveEntry } from "../core/notification.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import type { ApprovalMessage } from "./message.ts";
import { sendEmail } from "./send-email.ts";
import type { SendOutcome } from "./send-outcome.ts";
import { sendSlack } from "./send-slack.ts";
import { sendWebhook } from "./send-webhook.ts";
import { sendWecom } from "./send-wecom.ts";
import type { NotifySettings } from "./settings.ts";

const failed = (message: string): SendOutcome => ({
  ok: false,
  retry: false,
  error: errorInfo("NOTIFY_FAILED", message),
});

/**
 * Sends one message on the channel its entry stands for. A named notifier is read from the
 * settings now, so a rotated webhook URL or secret applies to messages still owed; one the
 * config no longer defines fails the message, naming it.
 */
export async function sendMessage(
  entry: NotifyEntry,
  m: ApprovalMessage,
  s: NotifySettings,
  outbound: OutboundSettings,
  n: { id: string; createdAt: number; now: number },
): Promise<SendOutcome> {
  const target = resolveEntry(entry, s.notifiers);
  if (target === null)
    return failed(`The notifier ${JSON.stringify(entry)} is not defined in the config's notifiers.`);
  switch (target.channel) {
    case "email": {
      const to = emailRecipients(target, m.approver);
      return typeof to === "string" ? failed(to) : sendEmail(m, to, s, n.id);
    }
    case "slack":
      return sendSlack(target, m, s, outbound);
    case "wecom":
      return sendWecom(target, m, outbound);
    case "webhook": {
      const secret = target.secret ?? s.webhookSecret;
      if (secret === null)
        return failed("A webhook channel needs a secret: set notify.webhook_secret in the config.");
      return sendWebhook(target, m, secret, outbound, n.id, n.createdAt, n.now);
    }
  }
}
