import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";

export const MAINTENANCE_EVERY_MS = 60 * 60_000;
/** Delivered webhook deliveries stay in the endpoint's delivery log this long. */
export const DELIVERY_RETENTION_MS = 30 * 86_400_000;

/**
 * The one recurring item: prunes inbox rows past the dedupe horizon, delivered webhook
 * deliveries and signals past their retention, then schedules itself again.
 */
export async function maintenance(d: EngineDeps, _item: WorkItem, lease: Lease): Promise<void> {
  const pruned = await d.store.pruneInbox(d.clock.now() - d.dedupeHorizonMs);
  if (pruned > 0) d.log.info({ pruned }, "pruned inbox events past the dedupe horizon");
  const deliveries = await d.store.pruneDeliveries(d.clock.now() - DELIVERY_RETENTION_MS);
  if (deliveries > 0) d.log.info({ deliveries }, "pruned delivered webhook deliveries past their retention");
  const signals = await d.store.pruneSignals(d.clock.now() - d.signalRetentionMs);
  if (signals > 0) d.log.info({ signals }, "pruned signals past their retention");
  await d.store.enqueue([maintenanceItem(d.clock.now() + MAINTENANCE_EVERY_MS)]);
  await d.store.complete(lease);
}

export const maintenanceItem = (runAt: number) => ({
  kind: "maintenance" as const,
  tenantId: null,
  payload: {},
  runAt,
  dedupeKey: "maintenance",
});
