/**
 * A read's deadline that moves with progress: its signal aborts once `ms` pass without a
 * `touch()`. One timer covers a whole read (connecting, each redirect, each chunk), so a slow
 * but moving transfer of a large file goes on while a stalled one ends.
 */
export interface IdleTimer {
  readonly signal: AbortSignal;
  /** Progress was made: the deadline starts again. */
  touch(): void;
  /** The read is over: the timer stops and never aborts. */
  clear(): void;
}

/** Makes a read's idle timer; injected so a test can end a read by its own signal. */
export type IdleTimers = (ms: number) => IdleTimer;

export const idleTimer: IdleTimers = (ms) => {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  timer.unref();
  return {
    signal: ac.signal,
    touch: () => {
      if (!ac.signal.aborted) timer.refresh();
    },
    clear: () => clearTimeout(timer),
  };
};
