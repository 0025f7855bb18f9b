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

/**
 * Reads whether the HTTP server of this process is pressed: requests kept arriving in the
 * last WINDOW_MS (at least MIN_REQUESTS) and the event loop was busy for nearly all of it. A
 * worker sharing the process (`serve --role all`, `dev`) then claims a few items at a time, a
 * pause apart, so the loop answers requests first and the worker takes what they leave
 * (ARCHITECTURE §4.2).
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
    pressed =
      requests >= MIN_REQUESTS && performance.eventLoopUtilization(now, last).utilization >= BUSY_SHARE;
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
