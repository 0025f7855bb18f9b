import { LonghaulError } from "../core/errors.ts";
import type { DeliveryDbRow, EndpointDbRow } from "./rows.ts";
import type { DeliveryAttemptResult, DeliveryState } from "./store.ts";

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
