import assert from "node:assert/strict";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { httpPressure } from "../src/http/http-pressure.ts";

/** Holds the event loop for `ms`, as a busy handler would. */
const spin = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

const get = (port: number) =>
  new Promise<void>((resolve) => {
    const req = request({ port, host: "127.0.0.1", path: "/", agent: false }, (res) => {
      res.resume();
      res.on("end", resolve);
    });
    req.on("error", () => resolve());
    req.end();
  });

test("HTTP is pressed only while requests arrive and the loop is busy nearly all the time", async () => {
  // Each request holds the loop for 20 ms: a client that keeps one in flight keeps it busy.
  const server = createServer((_req, res) => {
    spin(20);
    res.end("ok");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const pressure = httpPressure(server);
  try {
    await delay(250);
    assert.equal(pressure.pressed(), false, "idle: not pressed");

    // The loop busy with no request arriving (a worker's own backlog): not pressed.
    const busyUntil = performance.now() + 400;
    while (performance.now() < busyUntil) {
      spin(50);
      await new Promise((r) => setImmediate(r));
    }
    await delay(0);
    assert.equal(pressure.pressed(), false, "a busy loop without requests is not HTTP's pressure");

    // Requests back to back, each holding the loop: pressed within a few windows.
    let loading = true;
    const load = (async () => {
      while (loading) await get(port);
    })();
    const seen = performance.now() + 5000;
    while (!pressure.pressed() && performance.now() < seen) await delay(20);
    assert.equal(pressure.pressed(), true, "requests arriving while the loop is busy press it");
    loading = false;
    await load;

    // Once they stop, the next windows are quiet again.
    const quiet = performance.now() + 5000;
    while (pressure.pressed() && performance.now() < quiet) await delay(20);
    assert.equal(pressure.pressed(), false, "no longer pressed once the requests stop");
  } finally {
    pressure.close();
    await new Promise((r) => server.close(r));
  }
});
