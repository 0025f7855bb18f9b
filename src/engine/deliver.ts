import type { Lease, WorkItem } from "../store/store.ts";
import { deliverWebhook } from "../usecases/deliver-webhook.ts";
import type { EngineDeps } from "./deps.ts";

/** The `deliver` work item: one outbound webhook attempt (see `deliverWebhook`). */
export async function deliver(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  const deliveryId = String(item.payload.deliveryId);
  const r = await deliverWebhook(
    {
      outbound: d.store,
      queue: d.store,
      clock: d.clock,
      settings: d.outbound,
      ...(d.random ? { random: d.random } : {}),
    },
    { deliveryId, lease },
  );
  if (r.kind === "attempted" && r.result.outcome !== "delivered") {
    d.log.info(
      { deliveryId, endpointId: r.endpointId, outcome: r.result.outcome, code: r.result.error.code },
      "outbound webhook attempt failed",
    );
  }
}
