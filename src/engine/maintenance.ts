import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";

export const MAINTENANCE_EVERY_MS = 60 * 60_000;

/** The one recurring item: prunes inbox rows past the dedupe horizon, then schedules itself again. */
export async function maintenance(d: EngineDeps, _item: WorkItem, lease: Lease): Promise<void> {
  const pruned = await d.store.pruneInbox(d.clock.now() - d.dedupeHorizonMs);
  if (pruned > 0) d.log.info({ pruned }, "pruned inbox events past the dedupe horizon");
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
