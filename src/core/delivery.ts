import { type ErrorInfo, LonghaulError } from "./errors.ts";

/** An outbound delivery's state (ARCHITECTURE §4.7). */
export type DeliveryState = "pending" | "delivered" | "failed" | "dead" | "canceled";

/**
 * The delivery's transition table. A pending delivery is delivered, fails for good (`failed`:
 * its endpoint is gone), runs out of its retry schedule (`dead`) or is canceled with its
 * endpoint; a dead or failed one is replayed back to pending. An attempt already in flight
 * when its delivery left `pending` still lands: any state but `delivered` may move to it,
 * which is the one terminal state.
 */
export const deliveryMoves: Readonly<Record<DeliveryState, readonly DeliveryState[]>> = {
  pending: ["delivered", "failed", "dead", "canceled"],
  failed: ["pending", "delivered"],
  dead: ["pending", "delivered"],
  canceled: ["delivered"],
  delivered: [],
};

/** Whether the table lets a delivery in state `from` move to `to`. Staying put is not a move. */
export function canMoveDelivery(from: DeliveryState, to: DeliveryState): boolean {
  return deliveryMoves[from].includes(to);
}

/** The outcome of one outbound attempt, and what it means for the delivery. */
export type DeliveryAttemptResult =
  | { outcome: "delivered"; status: number | null }
  | { outcome: "retry"; status: number | null; error: ErrorInfo; nextAttemptAt: number }
  | { outcome: "dead" | "failed" | "gone"; status: number | null; error: ErrorInfo };

/** LIMIT_REACHED when a tenant that has `count` endpoints may have no more than `max`. */
export function checkEndpointCount(count: number, max: number | undefined): void {
  if (max === undefined || max === 0 || count < max) return;
  throw new LonghaulError(
    "LIMIT_REACHED",
    `This tenant has ${count} webhook endpoints, its limit; delete one it no longer needs (one endpoint can receive many event types) before creating another.`,
  );
}

/**
 * DELIVERY_NOT_REPLAYABLE unless the endpoint is enabled and the delivery may move back to
 * pending (it is dead or failed). Both as the store reads them.
 */
export function checkReplayable(
  endpoint: { id: string; status: "enabled" | "disabled"; disabled_reason: string | null },
  d: { id: string; state: DeliveryState },
): void {
  if (endpoint.status !== "enabled") {
    throw new LonghaulError(
      "DELIVERY_NOT_REPLAYABLE",
      `Webhook endpoint ${endpoint.id} is disabled (${endpoint.disabled_reason ?? "no reason recorded"}); create a new endpoint to receive events again.`,
    );
  }
  if (!canMoveDelivery(d.state, "pending")) {
    throw new LonghaulError(
      "DELIVERY_NOT_REPLAYABLE",
      `Delivery ${d.id} is ${d.state}; only a dead or failed delivery can be replayed.`,
    );
  }
}

/**
 * The state a delivery in state `current` takes after an attempt with result `r`. Only an
 * attempt on a pending delivery moves it as its outcome says; one that finds it moved on
 * (canceled while the attempt was in flight) leaves it there unless the attempt landed.
 */
export function attemptState(current: DeliveryState, r: DeliveryAttemptResult): DeliveryState {
  const state: DeliveryState =
    r.outcome === "retry" ? "pending" : r.outcome === "gone" ? "failed" : r.outcome;
  if (current !== "pending" && state !== "delivered") return current;
  return canMoveDelivery(current, state) ? state : current;
}

/**
 * How long an event sink's delivery waits, at least, for an earlier one of the same task that
 * is due or being attempted: it polls at this pace instead of spinning while the broker answers.
 */
export const SINK_TURN_WAIT_MS = 250;
