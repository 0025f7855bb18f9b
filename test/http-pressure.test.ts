import assert from "node:assert/strict";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { httpPressure } from "../src/http/http-pressure.ts";

const get = (port: number) =>
  new Promise<void>((resolve) => {
    const req = request({ port, host: "127.0.0.1", path: "/", agent: false }, (res) => {
      res.resume();
      res.on("end", resolve);
    });
    req.on("error", () => resolve());
    req.end();
  });

/** A gauge on a real server whose busy share and windows the test sets. */
async function gauge() {
  const server = createServer((_req, res) => res.end("ok"));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  let busy = 0;
  let endWindow: () => void = () => {};
  let stopped = false;
  const pressure = httpPressure(server, {
    busyShare: () => busy,
    everyWindow: (fn) => {
      endWindow = fn;
      return () => {
        stopped = true;
      };
    },
  });
  return {
    pressure,
    /** Sends `n` real requests, then closes the window with the loop busy `share` of it. */
    async window(n: number, share: number) {
      for (let i = 0; i < n; i++) await get(port);
      busy = share;
      endWindow();
      return pressure.pressed();
    },
    stopped: () => stopped,
    close: async () => {
      pressure.close();
      await new Promise((r) => server.close(r));
    },
  };
}

test("HTTP is pressed only in a window where requests kept arriving and the loop was busy nearly all of it", async () => {
  const g = await gauge();
  try {
    assert.equal(g.pressure.pressed(), false, "before any window: not pressed");
    assert.equal(await g.window(0, 0), false, "idle: not pressed");
    assert.equal(await g.window(0, 1), false, "a busy loop without requests is not HTTP's pressure");
    assert.equal(await g.window(5, 1), false, "a few requests a window do not press it");
    assert.equal(
      await g.window(12, 0.5),
      false,
      "many requests on a loop with time to spare do not press it",
    );
    assert.equal(await g.window(12, 0.95), true, "requests arriving while the loop is busy press it");
    assert.equal(g.pressure.pressed(), true, "it stays pressed until the next window ends");
    assert.equal(await g.window(0, 0.95), false, "no longer pressed once the requests stop");
    assert.equal(await g.window(10, 0.9), true, "10 requests and a 90 % busy loop are enough");
  } finally {
    await g.close();
  }
  assert.equal(g.pressure.pressed(), false, "closed: not pressed");
  assert.equal(g.stopped(), true, "closing stops the windows");
});
