import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { ManualClock } from "../src/core/clock.ts";
import { RetryAfterError } from "../src/core/errors.ts";
import { runTask } from "../src/core/replay.ts";
import { CapabilityUrls } from "../src/tokens/capability-urls.ts";
import { Keyring } from "../src/tokens/keyring.ts";
import { verifyToken } from "../src/tokens/token.ts";
import { type Stack, startStack } from "./stack.ts";

// Time in src comes from the injected clock; these pin the places that once read the system
// clock directly. Each clock here reads differently from the system's (a fixed date, or the
// system's time moved ahead), so a reading of the system clock gives a different answer.

const HOUR = 3_600_000;

describe("the API key cache", () => {
  let offsetMs = 0;
  const clock = { now: () => Date.now() + offsetMs };
  let stack: Stack;
  before(async () => {
    stack = await startStack({ clock });
  });
  after(() => stack.close());

  test("a revoked key is refused once the injected clock passes the cache's five seconds", async () => {
    const key = newApiKey();
    const keyId = await stack.store.addApiKey(stack.tenantId, hashApiKey(key), "…test");
    const list = () =>
      fetch(`${stack.url}/v1/tasks`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);
    assert.equal(await list(), 200);
    await stack.store.revokeApiKey(stack.tenantId, keyId);
    assert.equal(await list(), 200, "within the cache's lifetime the key is still known");
    offsetMs = 6000;
    assert.equal(await list(), 401, "past it on the injected clock the revocation is seen");
  });
});

describe("capability URLs", () => {
  test("a link for a step without a deadline expires its default lifetime after the injected clock's now", () => {
    const clock = new ManualClock(Date.UTC(2030, 0, 1));
    const keyring = Keyring.from([{ id: "k1", secret: "a-secret-of-at-least-16-chars" }]);
    const lifetimeMs = 48 * HOUR;
    const graceMs = 24 * HOUR;
    const urls = new CapabilityUrls(keyring, () => "http://127.0.0.1:1", lifetimeMs, clock, graceMs);
    const url = urls.callback("tn_1", "t_1", { stepId: "s", attempts: 1, deadlineAt: null });
    const token = url.slice(url.lastIndexOf("/") + 1);
    const claims = verifyToken(keyring, token, clock.now());
    assert.equal(claims.expiresAt, clock.now() + lifetimeMs + graceMs);
  });
});

describe("RetryAfterError", () => {
  const run = (fn: () => Promise<unknown>, clock: ManualClock) =>
    runTask({
      fn,
      input: null,
      ctx: { taskId: "t_1", tenantId: "tn_1", type: "x", userId: null, traceId: null },
      history: [],
      ports: {
        storeRunOutcome: async () => {},
        registerWait: async () => {
          throw new Error("no waits here");
        },
        callbackUrl: () => "",
        markHandedOff: async () => {},
      },
      maxAttempts: 3,
      advanceAttempt: 1,
      clock,
    });

  test("given a time, the retry waits until that time on the engine's clock", async () => {
    const clock = new ManualClock(Date.UTC(2030, 0, 1));
    const at = new Date(clock.now() + 90_000);
    const result = await run(async () => {
      throw new RetryAfterError("come back later", at);
    }, clock);
    assert.equal(result.kind, "retry");
    assert.equal(result.kind === "retry" && result.delayMs, 90_000);
  });

  test("given a time already past on the engine's clock, the retry is at once", async () => {
    const clock = new ManualClock(Date.UTC(2030, 0, 1));
    const at = new Date(clock.now() - 1000);
    const result = await run(async () => {
      throw new RetryAfterError("come back later", at);
    }, clock);
    assert.equal(result.kind === "retry" && result.delayMs, 0);
  });

  test("given a delay, the retry waits that long", async () => {
    const clock = new ManualClock(Date.UTC(2030, 0, 1));
    const result = await run(async () => {
      throw new RetryAfterError("come back later", 12_345);
    }, clock);
    assert.equal(result.kind === "retry" && result.delayMs, 12_345);
  });
});
