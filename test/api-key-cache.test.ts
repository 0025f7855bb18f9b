import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { FastifyRequest } from "fastify";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { ManualClock } from "../src/core/clock.ts";
import { tenantAuth } from "../src/http/auth.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { TenantStore } from "../src/store/store.ts";
import { tempDir } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const tmp = tempDir();
after(() => tmp.cleanup());

/** A real store whose key lookups are counted, and the auth hook over it. */
async function counted(name: string, maxKeys?: number) {
  const store = new SqliteStore({ path: join(tmp.dir, `${name}.db`) });
  await store.migrate();
  const lookups = new Map<string, number>();
  const counting = {
    tenantByKeyHash: (hash: string) => {
      lookups.set(hash, (lookups.get(hash) ?? 0) + 1);
      return store.tenantByKeyHash(hash);
    },
  } as TenantStore;
  const clock = new ManualClock();
  const auth = tenantAuth(counting, clock, 5000, maxKeys);
  const as = async (key: string) => {
    const req = { headers: { authorization: `Bearer ${key}` } } as FastifyRequest;
    await auth(req);
    return req.tenant;
  };
  const tenant = async () => {
    const key = newApiKey();
    await store.createTenant({ name: "t", keyHash: hashApiKey(key) });
    return key;
  };
  return { store, clock, as, tenant, lookupsOf: (key: string) => lookups.get(hashApiKey(key)) ?? 0 };
}

describe("the API-key cache", () => {
  test("made-up keys are not cached, so any number of them leaves the real keys cached", async () => {
    const c = await counted("flood");
    try {
      const real = await c.tenant();
      assert.ok(await c.as(real));
      for (let i = 0; i < 10_050; i++) {
        await assert.rejects(c.as(`lh_made_up_${i}`), { code: "UNAUTHORIZED" });
      }
      assert.ok(await c.as(real));
      assert.equal(c.lookupsOf(real), 1, "the real key was never looked up again");
      assert.equal(c.lookupsOf("lh_made_up_7"), 1);
      await assert.rejects(c.as("lh_made_up_7"), { code: "UNAUTHORIZED" });
      assert.equal(c.lookupsOf("lh_made_up_7"), 2, "a miss is asked again");
    } finally {
      await c.store.close();
    }
  });

  test("the least recently used key is forgotten first, past the most kept", async () => {
    const c = await counted("lru", 2);
    try {
      const [a, b, third] = [await c.tenant(), await c.tenant(), await c.tenant()];
      await c.as(a);
      await c.as(b);
      await c.as(a); // a is now the most recently used
      await c.as(third); // over the limit: b goes
      await c.as(a);
      assert.equal(c.lookupsOf(a), 1, "a stayed");
      await c.as(b);
      assert.equal(c.lookupsOf(b), 2, "b was forgotten and looked up again");
      // A cached key still expires with the injected clock, so a revoked key stops working.
      c.clock.advance(5001);
      await c.as(b);
      assert.equal(c.lookupsOf(b), 3);
    } finally {
      await c.store.close();
    }
  });

  describe("over HTTP", () => {
    let stack: Stack;
    after(async () => {
      await stack?.close();
    });

    test("a key refused once works as soon as it is created", async () => {
      stack = await startStack();
      const key = newApiKey();
      const as = { headers: { authorization: `Bearer ${key}` } };
      const before = await stack.api("/v1/tasks", as);
      assert.equal(before.status, 401);
      assert.equal(before.body.error.code, "UNAUTHORIZED");
      await stack.store.createTenant({ name: "late", keyHash: hashApiKey(key) });
      const now = await stack.api("/v1/tasks", as);
      assert.equal(now.status, 200, JSON.stringify(now.body));
    });
  });
});
