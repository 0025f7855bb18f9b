import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { after, before, test } from "node:test";
import WebSocket from "ws";
import { defineTask } from "../src/core/task-type.ts";
import { eventJson } from "../src/http/event-streams.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

// GET /v1/events/ws rides the same hub as SSE: the slow-reader bound holds for it too.

const BIG = 64 * 1024;
const big = defineTask("ws.big", async () => "x".repeat(BIG));

let stack: Stack;
before(async () => {
  stack = await startStack({ taskTypes: [big], limits: { api_per_min: 0 } });
});
after(() => stack.close());

test("a WebSocket reader that stops reading costs the server at most about one page, and gets everything in order when it resumes", async () => {
  const startSeq = await stack.store.lastTaskEventSeq(stack.tenantId);
  const got: number[] = [];
  const ws = new WebSocket(`${stack.url.replace("http", "ws")}/v1/events/ws?last_event_id=${startSeq}`, {
    headers: { authorization: `Bearer ${stack.key}` },
  });
  ws.on("message", (m) => got.push(JSON.parse(String(m)).seq));
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  // The client stops reading its socket: what the server writes backs up in the kernel, then in user space.
  const socket = (ws as unknown as { _socket: Socket })._socket;
  socket.pause();
  await waitFor(() => stack.app.server.eventStreams.stats().streams >= 1);

  const TASKS = 250;
  for (let i = 0; i < TASKS; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, () =>
        stack.api("/v1/tasks", { method: "POST", body: { type: "ws.big", input: {} } }),
      ),
    );
  }
  await waitFor(
    async () => {
      const events = await stack.store.taskEvents(stack.tenantId, startSeq, 100_000);
      return events.filter((e) => e.type === "task.succeeded").length >= TASKS;
    },
    60_000,
    "the big tasks to finish",
  );
  const events = await stack.store.taskEvents(stack.tenantId, startSeq, 100_000);
  const logBytes = events.reduce((n, e) => n + eventJson(e).length, 0);
  const CAP = 512 * 1024;
  assert.ok(logBytes > 20 * CAP, `the log grew by ${logBytes} bytes, enough to overflow any bound`);
  const peak = stack.app.server.eventStreams.stats().peakBufferedBytes;
  assert.ok(peak <= CAP, `at most ${CAP} bytes wait in user space (peak ${peak})`);

  socket.resume();
  const lastSeq = events.at(-1)!.seq;
  await waitFor(() => got.at(-1) === lastSeq, 30_000, "the backlog to drain");
  assert.deepEqual(
    got,
    events.map((e) => e.seq),
  );
  ws.close();
  await waitFor(() => stack.app.server.eventStreams.stats().streams === 0, 5000, "the stream to close");
});
