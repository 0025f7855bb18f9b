import { Slots } from "../../src/engine/slots.ts";
import type { Store, WorkItem } from "../../src/store/store.ts";

/** The part of the store a queue consumer uses. */
export type QueueStore = Pick<Store, "claim" | "complete" | "recoverExpiredLeases">;

export interface DrainOptions {
  owner: string;
  /** Items run at once. */
  concurrency: number;
  leaseMs: number;
  /** The no-op "work" done on each claimed item, before it is completed. */
  handle?: (item: WorkItem) => void;
}

/**
 * Claims and completes until a claim finds nothing and nothing is in hand; returns the ids
 * it completed. It makes the store calls the engine's worker loop makes (src/engine/worker.ts):
 * claim up to the free slots, and while items finish quickly (they do here) up to
 * `concurrency` more ahead, each waiting for a slot; claim again at once after a claim that
 * found items; one `complete` call per item (the stores fold the
 * calls made at one moment into one statement); expired-lease recovery at most once a second.
 * Two differences, both so that this measures the store's queue rather than the loop's idle
 * policy: with every slot busy it waits for its own next completion instead of probing
 * `nextRunAt` and sleeping, and it stops when the queue is empty instead of idling.
 */
export async function drain(store: QueueStore, opts: DrainOptions): Promise<string[]> {
  const completed: string[] = [];
  const inHand = new Set<Promise<void>>();
  let failure: { err: unknown } | null = null;
  const rethrow = () => {
    if (failure) throw failure.err;
  };
  let lastRecovery = 0;
  const slots = new Slots(opts.concurrency);
  const work = async (item: WorkItem) => {
    await slots.take();
    const t0 = performance.now();
    try {
      opts.handle?.(item);
      await store.complete({ itemId: item.id, owner: opts.owner });
      completed.push(item.id);
    } finally {
      slots.free(performance.now() - t0);
    }
  };
  for (;;) {
    rethrow();
    const now = Date.now();
    if (now - lastRecovery >= Math.min(1000, opts.leaseMs / 3)) {
      lastRecovery = now;
      await store.recoverExpiredLeases();
    }
    const free = slots.claimable(inHand.size);
    const claimed = free > 0 ? await store.claim(opts.owner, free, opts.leaseMs) : [];
    for (const item of claimed) {
      const p: Promise<void> = work(item)
        .catch((err: unknown) => {
          failure ??= { err };
        })
        .finally(() => inHand.delete(p));
      inHand.add(p);
    }
    if (claimed.length > 0) continue;
    if (inHand.size === 0) break;
    await Promise.race(inHand);
  }
  rethrow();
  return completed;
}
