import type { Server } from "node:http";
import { performance } from "node:perf_hooks";

/** How often the load is read. */
const WINDOW_MS = 100;
/** The share of a window the event loop was busy at or above which HTTP is pressed. */
const BUSY_SHARE = 0.9;
/**
 * The requests a window must see for HTTP to be pressed (100 a second): fewer take a small
 * share of a busy loop, which is then busy with something else (the worker's own backlog).
 */
const MIN_REQUESTS = 10;

export interface HttpPressure {
  /** True when, in the last window, MIN_REQUESTS arrived and the event loop was busy BUSY_SHARE of it. */
  pressed(): boolean;
  close(): void;
}

/** What the gauge reads; the defaults are the process's own (tests give their own). */
export interface PressureSignals {
  /** The share of the time since the last call that the event loop was busy, 0 to 1. */
  busyShare?: () => number;
  /** Calls `fn` once a window; returns what stops it. */
  everyWindow?: (fn: () => void, ms: number) => () => void;
}

/** The event loop's busy share since the last call, from `performance.eventLoopUtilization`. */
function loopBusyShare(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const share = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return share;
  };
}

function unrefInterval(fn: () => void, ms: number): () => void {
  const timer = setInterval(fn, ms);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Reads whether the HTTP server of this process is pressed: requests kept arriving in the
 * last WINDOW_MS (at least MIN_REQUESTS) and the event loop was busy for nearly all of it. A
 * worker sharing the process (`serve --role all`, `dev`) then claims a few items at a time, a
 * pause apart, so the loop answers requests first and the worker takes what they leave
 * (ARCHITECTURE §4.2).
 */
export function httpPressure(server: Server, signals: PressureSignals = {}): HttpPressure {
  const busyShare = signals.busyShare ?? loopBusyShare();
  let requests = 0;
  let pressed = false;
  const onRequest = () => {
    requests++;
  };
  server.on("request", onRequest);
  const stop = (signals.everyWindow ?? unrefInterval)(() => {
    // Read every window, so that each reading covers one window only.
    const busy = busyShare() >= BUSY_SHARE;
    pressed = requests >= MIN_REQUESTS && busy;
    requests = 0;
  }, WINDOW_MS);
  return {
    pressed: () => pressed,
    close: () => {
      stop();
      server.off("request", onRequest);
      pressed = false;
    },
  };
}
