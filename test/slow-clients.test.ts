import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, test } from "node:test";
import { type Stack, startStack } from "./stack.ts";

let stack: Stack;
before(async () => {
  stack = await startStack({ httpTimeouts: { headersMs: 300, requestMs: 600 } });
});
after(() => stack.close());

/**
 * Opens a raw connection, writes `chunks` and keeps it open; resolves with what the server
 * sent once it hangs up. The server's own timeouts (under a second here) do the hanging up:
 * the guard below only keeps a server that never does from hanging the test, and is far
 * above them so that a busy machine's late timers do not fail it.
 */
function dribble(chunks: string[]): Promise<{ text: string }> {
  const { port } = new URL(stack.url);
  return new Promise((resolve, reject) => {
    let text = "";
    const socket = connect(Number(port), "127.0.0.1", () => {
      for (const c of chunks) socket.write(c);
    });
    socket.setEncoding("utf8");
    socket.on("data", (d) => {
      text += d;
    });
    socket.on("close", () => resolve({ text }));
    socket.on("error", reject);
    setTimeout(() => {
      socket.destroy();
      reject(new Error("the server kept a slow client connected"));
    }, 60_000).unref();
  });
}

test("a client that never finishes its headers is cut off", async () => {
  const r = await dribble(["POST /hooks/sim HTTP/1.1\r\nHost: x\r\nwebhook-id: 1\r\n"]);
  assert.match(r.text, /^HTTP\/1\.1 408/);
});

test("a client that never finishes its body is cut off", async () => {
  const r = await dribble([
    'POST /hooks/sim HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id":',
  ]);
  assert.match(r.text, /^HTTP\/1\.1 408/);
  const count = stack.store.db.prepare("SELECT count(*) AS n FROM inbox_events").get() as { n: number };
  assert.equal(count.n, 0, "nothing half-received is recorded");
});
