import type { Server } from "node:http";
import { performance } from "node:perf_hooks";

/** How often the load is read. */
const WINDOW_MS = 100;
/** The share of a window the event loop was busy at or above which HTTP is pressed. */
const BUSY_SHARE = 0.9;

export interface HttpPressure {
  /** True when, in the last window, requests arrived and the event loop was busy BUSY_SHARE of it. */
  pressed(): boolean;
  close(): void;
}

/**
 * Reads whether the HTTP server of this process is pressed: requests arrived in the last
 * WINDOW_MS and the event loop was busy for nearly all of it. A worker sharing the process
 * (`serve --role all`, `dev`) then keeps few items in hand, so the loop answers requests first
 * and the worker takes what they leave (ARCHITECTURE §4.1).
 */
export function httpPressure(server: Server): HttpPressure {
  let requests = 0;
  let pressed = false;
  let last = performance.eventLoopUtilization();
  const onRequest = () => {
    requests++;
  };
  server.on("request", onRequest);
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    pressed = requests > 0 && performance.eventLoopUtilization(now, last).utilization >= BUSY_SHARE;
    last = now;
    requests = 0;
  }, WINDOW_MS);
  timer.unref();
  return {
    pressed: () => pressed,
    close: () => {
      clearInterval(timer);
      server.off("request", onRequest);
      pressed = false;
    },
  };
}
