import { attemptDelivery } from "../outbound/attempt.ts";
import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";

/**
 * Sends one outbound webhook attempt (ARCHITECTURE §4.7) and records its outcome with the work
 * item's retry or completion in one transaction. A delivery that is no longer pending (its
 * endpoint was disabled or deleted) completes without a request.
 */
export async function deliver(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  const deliveryId = String(item.payload.deliveryId);
  const input = await d.store.deliveryForAttempt(deliveryId);
  if (input?.delivery.state !== "pending" || input.endpoint.status !== "enabled") {
    return d.store.complete(lease);
  }
  const result = await attemptDelivery(input, d.outbound, {
    now: () => d.clock.now(),
    random: d.random ?? Math.random,
  });
  if (result.outcome !== "delivered") {
    d.log.info(
      { deliveryId, endpointId: input.endpoint.id, outcome: result.outcome, code: result.error.code },
      "outbound webhook attempt failed",
    );
  }
  await d.store.recordDeliveryAttempt(lease, deliveryId, result);
}
