import type { Clock } from "../core/clock.ts";
import { attemptDelivery } from "../outbound/attempt.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import type { DeliveryAttemptResult, Lease, OutboundStore, QueueStore } from "../store/store.ts";

export type DeliverWebhookResult =
  | { kind: "skipped" }
  | { kind: "attempted"; endpointId: string; result: DeliveryAttemptResult };

/**
 * Sends one outbound webhook attempt (ARCHITECTURE §4.7) and records its outcome with the work
 * item's retry or completion in one transaction. A delivery that is no longer pending (its
 * endpoint was disabled or deleted) completes without a request.
 */
export async function deliverWebhook(
  d: {
    outbound: OutboundStore;
    queue: QueueStore;
    clock: Clock;
    settings: OutboundSettings;
    random?: () => number;
  },
  a: { deliveryId: string; lease: Lease },
): Promise<DeliverWebhookResult> {
  const input = await d.outbound.deliveryForAttempt(a.deliveryId);
  if (input?.delivery.state !== "pending" || input.endpoint.status !== "enabled") {
    await d.queue.complete(a.lease);
    return { kind: "skipped" };
  }
  const result = await attemptDelivery(input, d.settings, {
    now: () => d.clock.now(),
    random: d.random ?? Math.random,
  });
  await d.outbound.recordDeliveryAttempt(a.lease, a.deliveryId, result);
  return { kind: "attempted", endpointId: input.endpoint.id, result };
}
