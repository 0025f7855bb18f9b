import { hostname } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import { backoffMs } from "../core/backoff.ts";
import { LonghaulError, STORAGE_FULL_RETRY_AFTER_S } from "../core/errors.ts";
import { maintenanceItem, type TypedWorkItem, typedWorkItem } from "../core/work-item.ts";
import { SinkPool } from "../sinks/sink-pool.ts";
import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";
import { deadItem, handlers } from "./handlers.ts";
import { Slots } from "./slots.ts";

/**
 * While the HTTP server of its process is pressed, a worker claims at most YIELD_CLAIM items
 * at a time and waits YIELD_PAUSE_MS after each claim, however many it holds: at most ~800
 * items a second, so the loop answers requests first and the worker still makes progress,
 * even with slow handlers (a provider's call, a delivery) in hand.
 */
export const YIELD_CLAIM = 4;
export const YIELD_PAUSE_MS = 5;

export interface WorkerOptions {
  /** Work items handled at once. */
  concurrency?: number;
  /** How long a claimed item is ours before another worker may take it over. */
  leaseMs?: number;
  /** Longest sleep when idle; commits on this node wake the worker at once. */
  idleMs?: number;
  id?: string;
  /** Hand back leases an earlier process left (see Store.releaseOrphanedLeases). Default true. */
  releaseOrphansOnStart?: boolean;
}

/**
 * The worker loop: claim due items up to the free slots, run their handlers, keep their
 * leases alive, and sleep until the store signals new work or the next item is due. Expired
 * leases of crashed workers are handed back on a timer (ARCHITECTURE §3.4).
 *
 * At most `concurrency` handlers run at once (`Slots`). While they finish quickly, the worker
 * also holds up to `concurrency` items claimed ahead, each waiting for a slot with its lease
 * kept alive: the claim that refills the slots then travels with the completions that free
 * them, instead of one round trip after them. Slow handlers (a provider's call, a webhook
 * delivery) get no claim ahead, so no item waits long in one worker's hand while another
 * worker could run it.
 */
export class Worker {
  readonly id: string;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly idleMs: number;
  /** Items in hand: running, or claimed ahead and waiting for a slot. */
  private readonly running = new Set<Promise<void>>();
  private readonly slots: Slots;
  private stopped = true;
  private wake: (() => void) | null = null;
  private woken = false;
  private loopDone: Promise<void> = Promise.resolve();
  private unsubscribe: () => void = () => {};
  private lastRecovery = 0;
  private readonly releaseOrphans: boolean;
  /** Aborted by stop(), so a pause after a failed store call does not hold the shutdown. */
  private halt = new AbortController();
  private drained = false;
  private readonly d: EngineDeps;
  /** The event sinks' connections when the deps bring none: this worker's own, closed by stop(). */
  private readonly ownSinks: SinkPool | null;

  constructor(d: EngineDeps, opts: WorkerOptions = {}) {
    this.ownSinks = d.sinks ? null : new SinkPool();
    this.d = this.ownSinks ? { ...d, sinks: this.ownSinks } : d;
    this.id = opts.id ?? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
    this.concurrency = opts.concurrency ?? 16;
    this.slots = new Slots(this.concurrency);
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.idleMs = opts.idleMs ?? 1000;
    this.releaseOrphans = opts.releaseOrphansOnStart ?? true;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.halt = new AbortController();
    this.unsubscribe = this.d.store.onWork(() => this.poke());
    this.loopDone = this.loop().catch((err) => this.d.log.error({ err }, "worker loop crashed"));
  }

  /** Stops claiming, and waits for the items in hand to finish. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.halt.abort();
    this.unsubscribe();
    this.poke();
    await this.loopDone;
    await Promise.allSettled([...this.running]);
    await this.ownSinks?.close();
  }

  /**
   * Handles due work without the loop, for a process woken by a cron or a queue: claims due
   * items into the worker's slots as they free, as the loop does (claiming ahead too), until
   * nothing is due and nothing it claimed still runs, or `maxMs` (wall time, default 10 s) has
   * passed; items in hand are finished, not cut off. A slow item holds only its own slot. Works
   * whether or not the worker was started. `remaining`: due work is left (ARCHITECTURE §4.2).
   */
  async drain(opts: { maxMs?: number } = {}): Promise<{ processed: number; remaining: boolean }> {
    const until = performance.now() + (opts.maxMs ?? 10_000);
    if (!this.drained) {
      // The loop schedules the maintenance pass when it starts; a worker that only drains
      // schedules it on its first drain (deduped: one pending pass at a time).
      this.drained = true;
      await this.safely(() => this.d.store.enqueue([maintenanceItem(this.d.clock.now())]));
    }
    await this.safely(() => this.d.store.recoverExpiredLeases());
    let processed = 0;
    const mine = new Set<Promise<void>>();
    while (performance.now() < until) {
      const free = this.slots.claimable(this.running.size);
      if (free > 0) {
        const claimed = (await this.safely(() => this.d.store.claim(this.id, free, this.leaseMs))) ?? [];
        for (const item of claimed) {
          const p = this.handle(item);
          this.track(p);
          mine.add(p);
          void p.finally(() => mine.delete(p));
        }
        processed += claimed.length;
        // Every slot asked for was filled: more may be due.
        if (claimed.length > 0 && claimed.length === free) continue;
      }
      // Nothing more was due, or every slot is the started loop's: done once this drain's own
      // items have ended; what they make due meanwhile (a task's next step) is claimed first.
      if (mine.size === 0) break;
      await Promise.race(mine);
    }
    await Promise.allSettled([...mine]);
    const next = await this.safely(() => this.d.store.nextRunAt());
    return { processed, remaining: next != null && next <= this.d.clock.now() };
  }

  /** Wakes the loop; a poke while it is busy (claiming) is remembered, so no signal is lost. */
  private poke(): void {
    this.woken = true;
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private async loop(): Promise<void> {
    if (this.releaseOrphans) {
      const orphans = await this.safely(() => this.d.store.releaseOrphanedLeases());
      if (orphans) this.d.log.info({ orphans }, "took over work left by an earlier process");
    }
    await this.safely(() => this.d.store.enqueue([maintenanceItem(this.d.clock.now())]));
    while (!this.stopped) {
      this.woken = false;
      const now = this.d.clock.now();
      if (now - this.lastRecovery >= Math.min(1000, this.leaseMs / 3)) {
        this.lastRecovery = now;
        await this.safely(() => this.d.store.recoverExpiredLeases());
      }
      const pressed = this.d.httpPressed?.() ?? false;
      const slots = this.slots.claimable(this.running.size);
      const free = pressed ? Math.min(slots, YIELD_CLAIM) : slots;
      if (free === 0) {
        // Every slot is busy and nothing more is to be claimed ahead: the first item to
        // finish wakes the loop (track), so there is nothing to ask the store until then.
        await this.sleep(this.idleMs);
        continue;
      }
      const claimed = (await this.safely(() => this.d.store.claim(this.id, free, this.leaseMs))) ?? [];
      for (const item of claimed) this.track(this.handle(item));
      if (claimed.length > 0 && claimed.length === free) {
        // More may be due. While HTTP presses the loop, it goes first: a pause that no commit
        // or completion cuts short.
        if (pressed) await delay(YIELD_PAUSE_MS);
        continue;
      }
      await this.sleep(claimed.length > 0 ? 0 : await this.idleDelay());
    }
  }

  private async idleDelay(): Promise<number> {
    const next = await this.safely(() => this.d.store.nextRunAt());
    const wait = next == null ? 0 : next - this.d.clock.now();
    // Due but unclaimable items are blocked by a lease (same task): the holder finishing,
    // or lease recovery, wakes us, so do not spin on them.
    return wait > 0 ? Math.min(this.idleMs, wait) : this.idleMs;
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped || this.woken) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  private track(p: Promise<void>): void {
    this.running.add(p);
    void p.finally(() => {
      this.running.delete(p);
      this.poke();
    });
  }

  private async handle(item: WorkItem): Promise<void> {
    const lease: Lease = { itemId: item.id, owner: this.id };
    // The lease is ours from the claim: kept alive while the item waits for a slot, too.
    const heartbeat = setInterval(() => {
      this.d.store.extendLease(lease, this.leaseMs).catch(() => clearInterval(heartbeat));
    }, this.leaseMs / 3);
    heartbeat.unref();
    try {
      await this.slots.take();
      await this.run(item, lease);
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async run(item: WorkItem, lease: Lease): Promise<void> {
    const t0 = performance.now();
    const stop = this.d.metrics?.workSeconds.startTimer({ kind: item.kind });
    let outcome = "done";
    try {
      const typed = typedWorkItem(item);
      await (handlers[typed.kind] as (d: EngineDeps, item: TypedWorkItem, lease: Lease) => Promise<void>)(
        this.d,
        typed,
        lease,
      );
    } catch (err) {
      if (err instanceof LonghaulError && err.code === "LEASE_LOST") {
        outcome = "lease_lost";
        this.d.log.warn({ item: item.id, kind: item.kind }, "lease lost; another worker owns this item now");
        return;
      }
      outcome = "failed";
      const message = err instanceof Error ? err.message : String(err);
      this.d.log.error({ err, item: item.id, kind: item.kind, attempt: item.attempts }, "work item failed");
      const after = await this.safely(() =>
        this.d.store.fail(lease, message, this.d.clock.now() + backoffMs(item.attempts)),
      );
      if (after === "dead") deadItem(this.d, item, message);
    } finally {
      this.slots.free(performance.now() - t0);
      stop?.();
      this.d.metrics?.workItems.inc({ kind: item.kind, outcome });
    }
  }

  private async safely<T>(fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof LonghaulError && err.code === "LEASE_LOST")) {
        this.d.log.error({ err }, "store call failed");
        // A full disk stays full for a while: try again no sooner than clients are told to
        // (Retry-After), instead of failing a write every few hundred milliseconds.
        const full = err instanceof LonghaulError && err.code === "STORAGE_FULL";
        await delay(full ? STORAGE_FULL_RETRY_AFTER_S * 1000 : 200, undefined, {
          signal: this.halt.signal,
        }).catch(() => {});
      }
      return undefined;
    }
  }
}
