/**
 * While handlers take this long or less on average, a worker claims ahead (see Slots): an
 * item claimed ahead then waits about that long for its slot.
 */
export const CLAIM_AHEAD_UNDER_MS = 20;

/**
 * A worker's slots: at most `concurrency` handlers run at once, and items claimed ahead wait
 * for one, first claimed first. While handlers finish quickly (a mean under
 * CLAIM_AHEAD_UNDER_MS), up to `concurrency` more items may be held claimed ahead, so the
 * claim that refills the slots goes out with the completions that free them.
 */
export class Slots {
  /** Handlers running now (at most `concurrency`). */
  private active = 0;
  /** Items claimed ahead, waiting for a slot, first claimed first. */
  private readonly waiting: (() => void)[] = [];
  /** Mean duration of recent handlers (ms; weighted towards the latest), Infinity before one. */
  private meanMs = Number.POSITIVE_INFINITY;

  constructor(private readonly concurrency: number) {}

  /** How many more items to claim with `inHand` (running or waiting) already held. */
  claimable(inHand: number): number {
    const ahead = this.meanMs <= CLAIM_AHEAD_UNDER_MS ? this.concurrency : 0;
    return Math.max(0, this.concurrency + ahead - inHand);
  }

  /** Resolves once a handler may start: at once while fewer than `concurrency` run. */
  take(): Promise<void> | undefined {
    if (this.active < this.concurrency) {
      this.active++;
      return undefined;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** A handler that took `ms` ended: its slot goes to the first item waiting, if any. */
  free(ms: number): void {
    this.meanMs = this.meanMs === Number.POSITIVE_INFINITY ? ms : 0.8 * this.meanMs + 0.2 * ms;
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }
}
