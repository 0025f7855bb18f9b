import type { BlobStore } from "../blobs/blob-store.ts";
import type { Clock } from "../core/clock.ts";
import { REFUSAL_RETENTION_MS } from "../core/webhook-refusal.ts";
import { maintenanceItem } from "../core/work-item.ts";
import type {
  FileStore,
  InboxStore,
  Lease,
  OutboundStore,
  QueueStore,
  WaitStore,
  WebhookRefusalStore,
} from "../store/store.ts";
import { sweepOrphanBlobs } from "./sweep-orphan-blobs.ts";

/** How often the maintenance pass runs. */
export const MAINTENANCE_EVERY_MS = 60 * 60_000;
/** Delivered webhook deliveries stay in the endpoint's delivery log this long. */
export const DELIVERY_RETENTION_MS = 30 * 86_400_000;
/** A blob write's temporary file older than this was left by a process that died midway. */
export const BLOB_TEMP_MAX_AGE_MS = 60 * 60_000;

/**
 * The one recurring item: prunes inbox rows past the dedupe horizon, delivered webhook
 * deliveries, signals and refused-webhook counts past their retention, the blob store's
 * temporary files a crashed write left (older than an hour), and the final blobs of files and
 * artifacts no row names (older than a day: `sweepOrphanBlobs`), then schedules itself again.
 * Returns how many of each it removed.
 */
export async function runMaintenance(
  d: {
    store: InboxStore &
      OutboundStore &
      WaitStore &
      QueueStore &
      WebhookRefusalStore &
      Pick<FileStore, "namedBlobKeys">;
    clock: Clock;
    /** Inbox rows older than this are pruned; it must cover every provider's retry horizon. */
    dedupeHorizonMs: number;
    /** Signals older than this are pruned; later waits no longer see them. */
    signalRetentionMs: number;
    /** Absent: no blob store to sweep. */
    blobs?: BlobStore;
  },
  a: { lease: Lease },
): Promise<{
  inbox: number;
  deliveries: number;
  signals: number;
  refusals: number;
  blobTemps: number;
  blobOrphans: number;
}> {
  const now = d.clock.now();
  const pruned = {
    inbox: await d.store.pruneInbox(now - d.dedupeHorizonMs),
    deliveries: await d.store.pruneDeliveries(now - DELIVERY_RETENTION_MS),
    signals: await d.store.pruneSignals(now - d.signalRetentionMs),
    refusals: await d.store.pruneWebhookRefusals(now - REFUSAL_RETENTION_MS),
    blobTemps: (await d.blobs?.sweep(BLOB_TEMP_MAX_AGE_MS)) ?? 0,
    blobOrphans: d.blobs ? await sweepOrphanBlobs({ store: d.store, blobs: d.blobs, clock: d.clock }) : 0,
  };
  await d.store.enqueue([maintenanceItem(d.clock.now() + MAINTENANCE_EVERY_MS)]);
  await d.store.complete(a.lease);
  return pruned;
}
