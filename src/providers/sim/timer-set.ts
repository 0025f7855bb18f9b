/** The longest delay `setTimeout` honours; longer waits are taken in steps. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * Named, unref'd timers that can all be stopped at once. Scheduling under a name that is
 * already pending replaces that timer; after `clear()` nothing is scheduled any more. A
 * callback that throws is reported to `onError` instead of taking the process down.
 */
export class TimerSet {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #onError: (err: unknown) => void;
  #cleared = false;

  constructor(onError: (err: unknown) => void) {
    this.#onError = onError;
  }

  after(name: string, delayMs: number, fn: () => void): void {
    this.cancel(name);
    if (this.#cleared) return;
    const delay = Math.max(0, delayMs);
    const step = Math.min(delay, MAX_DELAY_MS);
    const timer = setTimeout(() => {
      this.#timers.delete(name);
      if (delay > step) this.after(name, delay - step, fn);
      else {
        try {
          fn();
        } catch (err) {
          this.#onError(err);
        }
      }
    }, step);
    timer.unref();
    this.#timers.set(name, timer);
  }

  cancel(name: string): void {
    const timer = this.#timers.get(name);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.#timers.delete(name);
  }

  clear(): void {
    this.#cleared = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}
