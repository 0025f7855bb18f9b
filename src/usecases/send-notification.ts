import type { Clock } from "../core/clock.ts";
import { approvalMessage } from "../notify/message.ts";
import { sendMessage } from "../notify/send-message.ts";
import type { NotifySettings } from "../notify/settings.ts";
import { nextAttemptAt } from "../outbound/attempt.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import type {
  Lease,
  NotificationAttemptResult,
  NotificationStore,
  QueueStore,
  WaitStore,
} from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";

export type SendNotificationResult =
  | { kind: "gone" }
  | { kind: "attempted"; channel: string; result: NotificationAttemptResult };

/**
 * Sends one attempt of an approval's message (ARCHITECTURE §4.4) and records it with its work
 * item's retry or completion in one transaction. The links are minted from the stored step,
 * which the transaction that owed the message had already committed, so they work the moment
 * the message arrives. A message whose approval ended first, or whose approver already
 * decided, is skipped; one of another attempt of the step too.
 */
export async function sendNotification(
  d: {
    store: NotificationStore & WaitStore & QueueStore;
    clock: Clock;
    urls: CapabilityUrls;
    notify: NotifySettings;
    outbound: OutboundSettings;
    random?: () => number;
  },
  a: { notificationId: string; lease: Lease },
): Promise<SendNotificationResult> {
  const n = await d.store.notification(a.notificationId);
  if (n?.state !== "pending") {
    await d.store.complete(a.lease);
    return { kind: "gone" };
  }
  const found = await d.store.stepForToken(n.tenantId, n.taskId, n.stepId);
  const waiting = found?.step.status === "waiting" && found.step.attempts === n.stepAttempt;
  // A reminder or escalation for an approver who decided meanwhile says nothing true any more.
  const decided =
    waiting && n.approver !== null && n.reason !== "request"
      ? (await d.store.approvalDecisions(n.taskId, n.stepId)).some((x) => x.approver === n.approver)
      : false;
  if (!found || !waiting || decided) {
    const result: NotificationAttemptResult = { outcome: "skipped" };
    await d.store.recordNotificationAttempt(a.lease, n.id, result);
    return { kind: "attempted", channel: n.channel, result };
  }
  const message = approvalMessage(d.urls, found.task, found.step, n.approver, n.reason);
  const now = d.clock.now();
  const sent = await sendMessage(n.target, message, d.notify, d.outbound, {
    id: n.id,
    createdAt: n.createdAt,
    now,
  });
  let result: NotificationAttemptResult;
  if (sent.ok) result = { outcome: "sent" };
  else if (!sent.retry) result = { outcome: "failed", error: sent.error };
  else {
    const made = n.roundAttempts + 1;
    const at = nextAttemptAt(
      made,
      d.outbound,
      { now: () => d.clock.now(), random: d.random ?? Math.random },
      sent.retryAfterMs ?? null,
    );
    result =
      at === null
        ? {
            outcome: "dead",
            error: {
              ...sent.error,
              message: `${sent.error.message} (gave up after ${made} attempts; replay it when fixed)`,
            },
          }
        : { outcome: "retry", error: sent.error, nextAttemptAt: at };
  }
  await d.store.recordNotificationAttempt(a.lease, n.id, result);
  return { kind: "attempted", channel: n.channel, result };
}
