import { LonghaulError } from "../core/errors.ts";
import type { DeliveryDbRow, EndpointDbRow } from "./rows.ts";
import type { DeliveryAttemptResult, DeliveryState } from "./store.ts";

/** LIMIT_REACHED when a tenant that has `count` endpoints may have no more than `max`. */
export function checkEndpointCount(count: number, max: number | undefined): void {
  if (max === undefined || max === 0 || count < max) return;
  throw new LonghaulError(
    "LIMIT_REACHED",
    `This tenant has ${count} webhook endpoints, its limit; delete one it no longer needs (one endpoint can receive many event types) before creating another.`,
  );
}

/** DELIVERY_NOT_REPLAYABLE unless the endpoint is enabled and the delivery is dead or failed. */
export function checkReplayable(endpoint: EndpointDbRow, d: DeliveryDbRow): void {
  if (endpoint.status !== "enabled") {
    throw new LonghaulError(
      "DELIVERY_NOT_REPLAYABLE",
      `Webhook endpoint ${endpoint.id} is disabled (${endpoint.disabled_reason ?? "no reason recorded"}); create a new endpoint to receive events again.`,
    );
  }
  if (d.state !== "dead" && d.state !== "failed") {
    throw new LonghaulError(
      "DELIVERY_NOT_REPLAYABLE",
      `Delivery ${d.id} is ${d.state}; only a dead or failed delivery can be replayed.`,
    );
  }
}

/**
 * The state a delivery in state `current` takes after an attempt with result `r`. A delivery
 * canceled while the attempt was in flight stays canceled unless the attempt landed.
 */
export function attemptState(current: DeliveryState, r: DeliveryAttemptResult): DeliveryState {
  const state: DeliveryState =
    r.outcome === "retry" ? "pending" : r.outcome === "gone" ? "failed" : r.outcome;
  return current !== "pending" && state !== "delivered" ? current : state;
}
