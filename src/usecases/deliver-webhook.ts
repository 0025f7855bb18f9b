import type { Clock } from "../core/clock.ts";
import { attemptDelivery } from "../outbound/attempt.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import { attemptSinkDelivery } from "../sinks/attempt-sink.ts";
import type { SinkPool } from "../sinks/sink-pool.ts";
import type { DeliveryAttemptResult, Lease, OutboundStore, QueueStore } from "../store/store.ts";

export type DeliverWebhookResult =
  | { kind: "skipped" }
  | { kind: "waiting"; until: number }
  | { kind: "attempted"; endpointId: string; result: DeliveryAttemptResult };

/**
 * Sends one outbound webhook attempt, or publishes to an event sink (ARCHITECTURE §4.7), and records its outcome with the work
 * item's retry or completion in one transaction. A delivery that is no longer pending (its
 * endpoint was disabled or deleted) completes without a request.
 */
export async function deliverWebhook(
  d: {
    outbound: OutboundStore;
    queue: QueueStore;
    clock: Clock;
    settings: OutboundSettings;
    random?: (() => number) | undefined;
    /** Connections to event sinks' brokers; required once a tenant has a sink. */
    sinks?: SinkPool | undefined;
  },
  a: { deliveryId: string; lease: Lease },
): Promise<DeliverWebhookResult> {
  const input = await d.outbound.deliveryForAttempt(a.deliveryId);
  if (input?.delivery.state !== "pending" || input.endpoint.status !== "enabled") {
    await d.queue.complete(a.lease);
    return { kind: "skipped" };
  }
  const opts = { now: () => d.clock.now(), random: d.random ?? Math.random };
  let result: DeliveryAttemptResult;
  if (input.endpoint.kind === "webhook") {
    result = await attemptDelivery(input, d.settings, opts);
  } else {
    // A sink keeps each task's events in order: this one waits while an earlier one is pending.
    const until = await d.outbound.earlierPendingDelivery(a.deliveryId);
    if (until !== null) {
      await d.outbound.deferDelivery(a.lease, until);
      return { kind: "waiting", until };
    }
    if (!d.sinks) throw new Error("deliverWebhook needs the sink pool to publish to an event sink");
    result = await attemptSinkDelivery(input, d.settings, d.sinks, opts);
  }
  await d.outbound.recordDeliveryAttempt(a.lease, a.deliveryId, result);
  return { kind: "attempted", endpointId: input.endpoint.id, result };
}
