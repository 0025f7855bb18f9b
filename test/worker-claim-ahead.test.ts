import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { systemClock } from "../src/core/clock.ts";
import type { EngineDeps } from "../src/engine/deps.ts";
import { CLAIM_AHEAD_UNDER_MS } from "../src/engine/slots.ts";
import { Worker, YIELD_CLAIM, YIELD_PAUSE_MS } from "../src/engine/worker.ts";
import type { Lease, WorkItem } from "../src/store/store.ts";
import { quietLog } from "./helpers.ts";

/** The worker's deps around `store`: the store calls these tests do not watch answer at once. */
function engineDeps(store: object): EngineDeps {
  const quiet = {
    onWork: () => () => {},
    extendLease: async () => {},
    recoverExpiredLeases: async () => 0,
    releaseOrphanedLeases: async () => 0,
    enqueue: async () => {},
    nextRunAt: async () => null,
  };
  return { store: { ...quiet, ...store }, clock: systemClock, log: quietLog() } as unknown as EngineDeps;
}

/** `n` advance items for tasks that no longer exist. */
function advanceItems(n: number): WorkItem[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `w${i}`,
    kind: "advance",
    tenantId: null,
    payload: { taskId: `t${i}` },
    attempts: 1,
  })) as unknown as WorkItem[];
}

/**
 * A queue of `n` advance items for tasks that no longer exist: the handler loads nothing
 * (after `handlerMs`) and completes its item. It records each claim with what the worker
 * held then, and how many handlers ran at once.
 */
function fakeQueue(n: number, handlerMs: number) {
  const items = advanceItems(n);
  let next = 0;
  const s = {
    claims: [] as { limit: number; inHand: number; running: number; at: number }[],
    claimed: 0,
    completed: [] as string[],
    running: 0,
    maxRunning: 0,
    maxInHand: 0,
  };
  const store = {
    async claim(_owner: string, limit: number) {
      s.claims.push({
        limit,
        inHand: s.claimed - s.completed.length,
        running: s.running,
        at: performance.now(),
      });
      const out = items.slice(next, next + limit);
      next += out.length;
      s.claimed += out.length;
      s.maxInHand = Math.max(s.maxInHand, s.claimed - s.completed.length);
      return out;
    },
    async loadForAdvance() {
      s.running++;
      s.maxRunning = Math.max(s.maxRunning, s.running);
      if (handlerMs > 0) await delay(handlerMs);
      else await new Promise((r) => setImmediate(r));
      return null;
    },
    async complete(lease: Lease) {
      await new Promise((r) => setImmediate(r));
      s.running--;
      s.completed.push(lease.itemId);
    },
  };
  const deps = engineDeps(store);
  return { s, deps, done: () => s.completed.length === n };
}

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await delay(5);
  }
}

test("while handlers finish quickly the worker claims ahead, and never runs more than its concurrency", async () => {
  const q = fakeQueue(400, 0);
  const worker = new Worker(q.deps, { concurrency: 4, idleMs: 20 });
  worker.start();
  await until(q.done);
  await worker.stop();
  assert.equal(new Set(q.s.completed).size, 400, "each item completed once");
  assert.equal(q.s.claimed, 400);
  assert.ok(q.s.maxRunning <= 4, `at most 4 handlers at once, saw ${q.s.maxRunning}`);
  assert.ok(q.s.maxInHand <= 8, `at most 4 running and 4 ahead in hand, saw ${q.s.maxInHand}`);
  assert.ok(
    q.s.claims.some((c) => c.limit > 0 && c.inHand >= 4),
    "some claim was made with every slot taken: ahead of the completions",
  );
});

test("slow handlers get no claim ahead: a claim asks only for free slots", async () => {
  const q = fakeQueue(12, CLAIM_AHEAD_UNDER_MS * 2);
  const worker = new Worker(q.deps, { concurrency: 4, idleMs: 20 });
  worker.start();
  await until(q.done);
  await worker.stop();
  assert.equal(new Set(q.s.completed).size, 12);
  assert.ok(q.s.maxInHand <= 4, `nothing held beyond the 4 slots, saw ${q.s.maxInHand}`);
  for (const c of q.s.claims)
    assert.ok(c.limit <= 4 - c.inHand, `claim of ${c.limit} with ${c.inHand} in hand`);
});

test("while HTTP presses the loop the worker claims at most YIELD_CLAIM items at a time, a pause apart, and fully again after", async () => {
  const q = fakeQueue(2000, 0);
  let pressed = true;
  const worker = new Worker({ ...q.deps, httpPressed: () => pressed }, { concurrency: 8, idleMs: 20 });
  worker.start();
  try {
    await until(() => q.s.completed.length >= 100);
    const c = q.s.claims;
    for (const { limit } of c) assert.ok(limit <= YIELD_CLAIM, `a claim of ${limit} while pressed`);
    for (let i = 1; i < c.length; i++) {
      const apart = c[i]!.at - c[i - 1]!.at;
      assert.ok(apart >= YIELD_PAUSE_MS - 1, `claims ${apart} ms apart`);
    }
    // Pressure ends: the next claims fill the slots and claim ahead again.
    pressed = false;
    await until(q.done);
  } finally {
    await worker.stop();
  }
  assert.equal(new Set(q.s.completed).size, 2000, "each item completed once");
  assert.ok(q.s.maxInHand > YIELD_CLAIM, `claimed fully once not pressed, saw ${q.s.maxInHand}`);
  assert.ok(q.s.maxInHand <= 16);
});

test("while HTTP presses the loop, slow handlers in hand do not stop the worker claiming", async () => {
  // Every handler waits until released: the items in hand never end while pressed.
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const items = advanceItems(20);
  let next = 0;
  const store = {
    async claim(_owner: string, limit: number) {
      const out = items.slice(next, next + limit);
      next += out.length;
      return out;
    },
    async loadForAdvance() {
      await gate;
      return null;
    },
    async complete() {},
  };
  const worker = new Worker(
    { ...engineDeps(store), httpPressed: () => true },
    { concurrency: 8, idleMs: 20 },
  );
  worker.start();
  try {
    // Times out (and fails) unless claims go on while every item in hand is stuck.
    await until(() => next >= 8);
  } finally {
    release();
    await worker.stop();
  }
});

test("stop runs the items claimed ahead: none is left leased", async () => {
  const q = fakeQueue(10_000, 0);
  const worker = new Worker(q.deps, { concurrency: 4, idleMs: 20 });
  worker.start();
  await until(() => q.s.claims.some((c) => c.inHand >= 4 && c.limit > 0));
  await worker.stop();
  assert.equal(q.s.completed.length, q.s.claimed, "every claimed item was run to its completion");
  assert.ok(q.s.completed.length < 10_000);
});

test("drain(): a slow item holds only its own slot; the others keep claiming and running", async () => {
  // Four items, two slots; the first item's handler waits until the last one has completed
  // (or 5 s, so that a drain that waits for whole batches ends, and fails below).
  const items = advanceItems(4);
  let next = 0;
  const completed: string[] = [];
  let lastDone: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    lastDone = resolve;
    setTimeout(resolve, 5000).unref();
  });
  const store = {
    async claim(_owner: string, limit: number) {
      const out = items.slice(next, next + limit);
      next += out.length;
      return out;
    },
    async loadForAdvance(taskId: string) {
      if (taskId === "t0") await gate;
      else await new Promise((r) => setImmediate(r));
      return null;
    },
    async complete(lease: Lease) {
      completed.push(lease.itemId);
      if (lease.itemId === "w3") lastDone();
    },
  };
  const deps = engineDeps(store);
  const worker = new Worker(deps, { concurrency: 2 });
  assert.deepEqual(await worker.drain({ maxMs: 30_000 }), { processed: 4, remaining: false });
  assert.deepEqual(completed.slice(0, 3).sort(), ["w1", "w2", "w3"], `completion order: ${completed}`);
  assert.equal(completed[3], "w0", "the slow item ends last, released by the last fast one");
});
