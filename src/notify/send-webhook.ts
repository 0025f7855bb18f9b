import type { WebhookTarget } from "../core/notification.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import { signStandardWebhook } from "../webhooks/standard-webhooks.ts";
import type { ApprovalMessage } from "./message.ts";
import { postJson } from "./post-json.ts";

const TYPES = {
  request: "approval.requested",
  reminder: "approval.reminder",
  escalation: "approval.escalated",
};

/** The JSON body: the step, the shown fields and this approver's links. */
export function webhookMessageBody(m: ApprovalMessage, createdAt: number): string {
  return JSON.stringify({
    type: TYPES[m.reason],
    timestamp: new Date(createdAt).toISOString(),
    data: {
      task_id: m.taskId,
      task_type: m.taskType,
      step_id: m.stepId,
      title: m.title,
      description: m.description,
      show: m.fields,
      approver: m.approver,
      deadline: m.deadline,
      links: m.links,
    },
  });
}

/**
 * Posts the message signed with Standard Webhooks (`webhook-id` the notification's id, the
 * same on every attempt, so a receiver dedupes retries), with the notifier's secret or the
 * deployment's `notify.webhook_secret`.
 */
export function sendWebhook(
  t: WebhookTarget,
  m: ApprovalMessage,
  secret: string,
  outbound: OutboundSettings,
  id: string,
  createdAt: number,
  nowMs: number,
) {
  const body = webhookMessageBody(m, createdAt);
  const timestampS = Math.floor(nowMs / 1000);
  const signature = signStandardWebhook({ id, timestampS, body, secret });
  return postJson(
    t.url,
    body,
    {
      "webhook-id": id,
      "webhook-timestamp": String(timestampS),
      "webhook-signature": signature,
    },
    outbound,
  );
}
