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

test("HTTP is pressed only while requests keep arriving and the loop is busy nearly all the time", async () => {
  // Each request holds the loop for `spinMs`: a client that keeps one in flight keeps it busy.
  let spinMs = 2;
  const server = createServer((_req, res) => {
    spin(spinMs);
    res.end("ok");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const pressure = httpPressure(server);
  let loading = false;
  let load: Promise<void> = Promise.resolve();
  const startLoad = () => {
    loading = true;
    load = (async () => {
      while (loading) await get(port);
    })();
  };
  const stopLoad = async () => {
    loading = false;
    await load;
  };
  const waitUntil = async (want: boolean) => {
    const until = performance.now() + 5000;
    while (pressure.pressed() !== want && performance.now() < until) await delay(20);
  };
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

    // A few slow requests keep the loop busy, but take a small part of what it could answer.
    spinMs = 40;
    startLoad();
    for (let i = 0; i < 8; i++) {
      await delay(50);
      assert.equal(pressure.pressed(), false, "a few requests a window do not press it");
    }
    await stopLoad();

    // Requests back to back, each holding the loop: pressed within a few windows.
    spinMs = 2;
    startLoad();
    await waitUntil(true);
    assert.equal(pressure.pressed(), true, "requests arriving while the loop is busy press it");
    await stopLoad();

    // Once they stop, the next windows are quiet again.
    await waitUntil(false);
    assert.equal(pressure.pressed(), false, "no longer pressed once the requests stop");
  } finally {
    loading = false;
    await load;
    pressure.close();
    await new Promise((r) => server.close(r));
  }
});
