import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { Client, type PoolClient } from "pg";
import { ManualClock } from "../src/core/clock.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { ulidGenerator } from "../src/core/ids.ts";
import { claim } from "../src/store/postgres/claim.ts";
import { CompleteBatcher } from "../src/store/postgres/complete-batch.ts";
import { type Ctx, Sql } from "../src/store/postgres/db.ts";
import { parseTarget } from "../src/store/postgres/pool.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import type { Lease } from "../src/store/store.ts";
import { sleep, tempDir, waitFor } from "./helpers.ts";
import { pgAvailableOrReport, pgBaseUrl, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";

const isLeaseLost = (e: unknown) => e instanceof LonghaulError && e.code === "LEASE_LOST";
const lease = (itemId: string, owner = "w"): Lease => ({ itemId, owner });
const key = (l: Lease) => `${l.itemId}:${l.owner}`;

/** A batcher whose statement is recorded and answered by hand. */
function recorded(opts = { maxInFlight: 1, maxBatch: 500 }) {
  const sent: { leases: readonly Lease[]; answer: (done: Set<string> | Error) => void }[] = [];
  const batcher = new CompleteBatcher(
    (leases) =>
      new Promise((resolve, reject) => {
        sent.push({ leases, answer: (done) => (done instanceof Error ? reject(done) : resolve(done)) });
      }),
    opts,
  );
  return { batcher, sent };
}
const tick = () => new Promise((r) => setImmediate(r));
const settledStates = (ps: Promise<unknown>[]) =>
  Promise.allSettled(ps).then((rs) => rs.map((r) => r.status));

describe("CompleteBatcher", () => {
  test("completions made in one turn go out in one statement, each with its own answer", async () => {
    const { batcher, sent } = recorded();
    const leases = Array.from({ length: 16 }, (_, i) => lease(String(i + 1)));
    const done = leases.map((l) => batcher.complete(l));
    await tick();
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0]!.leases, leases);
    // Item 3's lease is no longer held: only that caller sees LEASE_LOST.
    sent[0]!.answer(new Set(leases.filter((l) => l.itemId !== "3").map(key)));
    const results = await Promise.allSettled(done);
    assert.deepEqual(
      results.map((r) => r.status),
      leases.map((l) => (l.itemId === "3" ? "rejected" : "fulfilled")),
    );
    assert.ok(isLeaseLost((results[2] as PromiseRejectedResult).reason));
  });

  test("a completion waits for the statement that deleted its item", async () => {
    const { batcher, sent } = recorded();
    let resolved = false;
    const p = batcher.complete(lease("1")).then(() => {
      resolved = true;
    });
    await tick();
    await tick();
    assert.equal(resolved, false);
    sent[0]!.answer(new Set(["1:w"]));
    await p;
    assert.equal(resolved, true);
  });

  test("the holder's answer is told apart from a stale owner's for one item", async () => {
    const { batcher, sent } = recorded();
    const stale = batcher.complete(lease("7", "old"));
    const holder = batcher.complete(lease("7", "new"));
    await tick();
    // Never one statement for two calls on one item: the second goes in the next batch.
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0]!.leases, [lease("7", "old")]);
    sent[0]!.answer(new Set());
    await assert.rejects(stale, isLeaseLost);
    await tick();
    assert.equal(sent.length, 2);
    assert.deepEqual(sent[1]!.leases, [lease("7", "new")]);
    sent[1]!.answer(new Set(["7:new"]));
    await holder;
  });

  test("calls made while a statement is on its way go out together after it", async () => {
    const { batcher, sent } = recorded({ maxInFlight: 1, maxBatch: 500 });
    const first = batcher.complete(lease("1"));
    await tick();
    const more = [batcher.complete(lease("2")), batcher.complete(lease("3"))];
    await tick();
    const three = [batcher.complete(lease("4"))];
    await tick();
    assert.equal(sent.length, 1);
    sent[0]!.answer(new Set(["1:w"]));
    await first;
    await tick();
    assert.equal(sent.length, 2);
    assert.deepEqual(
      sent[1]!.leases.map((l) => l.itemId),
      ["2", "3", "4"],
    );
    sent[1]!.answer(new Set(["2:w", "3:w", "4:w"]));
    await Promise.all([...more, ...three]);
  });

  test("batches are at most maxBatch leases, and up to maxInFlight go at once", async () => {
    const { batcher, sent } = recorded({ maxInFlight: 2, maxBatch: 3 });
    const done = Array.from({ length: 8 }, (_, i) => batcher.complete(lease(String(i + 1))));
    await tick();
    assert.deepEqual(
      sent.map((s) => s.leases.length),
      [3, 3],
    );
    sent[0]!.answer(new Set(sent[0]!.leases.map(key)));
    await tick();
    assert.deepEqual(
      sent.map((s) => s.leases.length),
      [3, 3, 2],
    );
    for (const s of sent.slice(1)) s.answer(new Set(s.leases.map(key)));
    await Promise.all(done);
  });

  test("a failed statement fails every call in it; idle() waits for the ones on their way", async () => {
    const { batcher, sent } = recorded();
    const done = [batcher.complete(lease("1")), batcher.complete(lease("2"))];
    await tick();
    let idle = false;
    const idled = batcher.idle().then(() => {
      idle = true;
    });
    await tick();
    assert.equal(idle, false);
    sent[0]!.answer(new Error("connection lost"));
    assert.deepEqual(await settledStates(done), ["rejected", "rejected"]);
    await idled;
    assert.equal(idle, true);
  });

  test("an id the database cannot hold is LEASE_LOST without a statement", async () => {
    const { batcher, sent } = recorded();
    await assert.rejects(batcher.complete(lease("not-a-number")), isLeaseLost);
    await tick();
    assert.equal(sent.length, 0);
  });
});

const unreachable = await pgUnreachable();

if (pgAvailableOrReport(unreachable, "PostgreSQL batched completion tests")) {
  const { fresh } = pgTestSchemas();
  const enqueueN = (store: PostgresStore, n: number) =>
    store.enqueue(
      Array.from({ length: n }, (_, i) => ({ kind: "timeout" as const, tenantId: null, payload: { i } })),
    );
  const remaining = async (schema: string) => {
    const c = new Client({ connectionString: pgBaseUrl });
    await c.connect();
    try {
      const r = await c.query<{ id: string }>(
        `SELECT id::text AS id FROM "${schema}".work_items ORDER BY id`,
      );
      return r.rows.map((x) => x.id);
    } finally {
      await c.end();
    }
  };

  describe("postgres batched completion", () => {
    test("a batch with one stale lease: that one is LEASE_LOST and the item stays with its new holder", async () => {
      const schema = fresh();
      const clock = new ManualClock(Date.UTC(2026, 0, 1));
      const a = new PostgresStore({ url: pgUrl(schema), clock });
      const b = new PostgresStore({ url: pgUrl(schema), clock });
      await a.migrate();
      try {
        await enqueueN(a, 5);
        const items = await a.claim("a", 5, 1000);
        assert.equal(items.length, 5);
        // a's lease on the first item expires and b takes the item over.
        const stale = items[0]!;
        const admin = new Client({ connectionString: pgBaseUrl });
        await admin.connect();
        await admin.query(`UPDATE "${schema}".work_items SET lease_expires_at = 0 WHERE id = $1`, [stale.id]);
        await admin.end();
        assert.equal(await b.recoverExpiredLeases(), 1);
        const retaken = await b.claim("b", 5, 60_000);
        assert.deepEqual(
          retaken.map((i) => i.id),
          [stale.id],
        );
        const states = await settledStates(items.map((it) => a.complete({ itemId: it.id, owner: "a" })));
        assert.deepEqual(states, ["rejected", "fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
        // Each fulfilled completion had committed when it resolved: another connection sees it.
        assert.deepEqual(await remaining(schema), [stale.id]);
        await b.complete({ itemId: stale.id, owner: "b" });
        assert.deepEqual(await remaining(schema), []);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    test("completing an item of a concurrency key wakes the workers, here and on other nodes", async () => {
      const schema = fresh();
      const a = new PostgresStore({ url: pgUrl(schema) });
      const b = new PostgresStore({ url: pgUrl(schema) });
      await a.migrate();
      try {
        await a.enqueue([
          { kind: "timeout", tenantId: null, payload: { n: 1 }, concurrencyKey: "k" },
          { kind: "timeout", tenantId: null, payload: { n: 2 }, concurrencyKey: "k" },
          { kind: "timeout", tenantId: null, payload: { n: 3 } },
        ]);
        const items = await a.claim("w", 10, 60_000);
        assert.equal(items.length, 2);
        const woken = { a: 0, b: 0 };
        a.onWork(() => woken.a++);
        b.onWork(() => woken.b++);
        // Each listener is called once when its LISTEN connection is up.
        await waitFor(() => woken.a === 1 && woken.b === 1, 10_000, "LISTEN up");
        const plain = items.find((i) => i.payload.n === 3)!;
        await a.complete({ itemId: plain.id, owner: "w" });
        await sleep(200);
        assert.deepEqual(woken, { a: 1, b: 1 });
        const keyed = items.find((i) => i.payload.n === 1)!;
        await a.complete({ itemId: keyed.id, owner: "w" });
        assert.equal(woken.a, 2);
        await waitFor(() => woken.b === 2, 10_000, "b woken by NOTIFY");
        assert.deepEqual(
          (await b.claim("w", 10, 60_000)).map((i) => i.payload.n),
          [2],
        );
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    test("a claim commits without waiting for a WAL flush, and only the claim", async () => {
      const schema = fresh();
      const store = new PostgresStore({ url: pgUrl(schema) });
      await store.migrate();
      await enqueueN(store, 3);
      await store.close();
      const client = new Client(parseTarget(pgUrl(schema)).client);
      await client.connect();
      const clock = new ManualClock(Date.now());
      const c: Ctx = {
        sql: new Sql(client as unknown as PoolClient),
        clock,
        ids: ulidGenerator(clock),
        schema,
        wake: { channel: "unused", payload: "" },
        effects: { work: false, events: [] },
      };
      const setting = async () =>
        (await client.query<{ s: string }>("SELECT current_setting('synchronous_commit') AS s")).rows[0]!.s;
      try {
        assert.equal(await setting(), "on");
        await client.query("BEGIN");
        assert.equal((await claim(c, "w", 1, 60_000, null)).length, 1);
        assert.equal(await setting(), "off", "the claim's transaction commits asynchronously");
        await client.query("COMMIT");
        // Without a transaction around it (as the store runs it), the connection keeps its setting
        // for the statements after it, such as a completion.
        assert.equal(await setting(), "on");
        assert.equal((await claim(c, "w", 1, 60_000, null)).length, 1);
        assert.equal(await setting(), "on");
      } finally {
        await client.end();
      }
    });

    test("a worker process killed mid-drain: only its unfinished items run again", async () => {
      const schema = fresh();
      const store = new PostgresStore({ url: pgUrl(schema) });
      await store.migrate();
      const N = 400;
      await enqueueN(store, N);
      // A child that drains with short leases and prints each id once its completion resolved.
      const tmp = tempDir();
      const script = join(tmp.dir, "drain-child.mts");
      const src = (p: string) => JSON.stringify(pathToFileURL(join(import.meta.dirname, "..", p)).href);
      writeFileSync(
        script,
        `import { PostgresStore } from ${src("src/store/postgres/postgres-store.ts")};
         const store = new PostgresStore({ url: process.env.URL });
         for (;;) {
           const items = await store.claim("child", 16, 1000);
           await Promise.all(items.map(async (it) => {
             await new Promise((r) => setTimeout(r, Math.random() * 4));
             await store.complete({ itemId: it.id, owner: "child" });
             process.stdout.write(it.id + "\\n");
           }));
         }`,
      );
      const child = spawn(process.execPath, ["--import", "tsx", script], {
        env: { ...process.env, URL: pgUrl(schema) },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let out = "";
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (d: string) => {
        out += d;
      });
      try {
        const deadline = Date.now() + 60_000;
        while (out.split("\n").length < N / 3 && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 5));
        child.kill("SIGKILL");
        await new Promise((r) => child.once("exit", r));
        const finished = new Set(out.split("\n").filter(Boolean));
        assert.ok(finished.size > 0 && finished.size < N, `the child finished ${finished.size} items`);
        // Its leases expire; another worker recovers and drains the rest.
        await new Promise((r) => setTimeout(r, 1100));
        await store.recoverExpiredLeases();
        const again = new Set<string>();
        for (;;) {
          const items = await store.claim("rescuer", 50, 60_000);
          if (items.length === 0) break;
          for (const it of items) again.add(it.id);
          await Promise.all(items.map((it) => store.complete({ itemId: it.id, owner: "rescuer" })));
        }
        const rerun = [...again].filter((id) => finished.has(id));
        assert.deepEqual(rerun, [], "finished items ran again");
        // Items whose completion committed as the child died are in neither set.
        assert.ok(finished.size + again.size <= N && finished.size + again.size >= N - 32);
        assert.deepEqual(await remaining(schema), []);
      } finally {
        child.kill("SIGKILL");
        await store.close();
        tmp.cleanup();
      }
    });
  });
}
