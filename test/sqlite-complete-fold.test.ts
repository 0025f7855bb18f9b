import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { LonghaulError } from "../src/core/errors.ts";
import { leaseLost } from "../src/store/ops/queue-ops.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Lease } from "../src/store/store.ts";
import { tempDir } from "./helpers.ts";

// SQLite folds `complete` calls made one after another into one operation (one DELETE per
// lease holder); each caller still gets the answer it would have got alone, and writes keep
// their order.

const tmp = tempDir();
after(tmp.cleanup);
let n = 0;

type Store = SqliteStore;

/** The store, and the write operations it has run for `complete` calls (one per fold). */
async function open() {
  const path = join(tmp.dir, `fold-${++n}.db`);
  const store = new SqliteStore({ path });
  await store.migrate();
  // Each fold's leases, as the store goes on adding to them until the fold is taken.
  const sent: Lease[][] = [];
  const s = store as unknown as Record<string, (...args: any[]) => Promise<unknown>>;
  const completeMany = s.completeMany!.bind(store);
  s.completeMany = (leases: Lease[]) => {
    sent.push(leases);
    return completeMany(leases);
  };
  return { store, folds: () => sent.map((leases) => leases.length) };
}

const leased = (store: Store) =>
  (store.db.prepare("SELECT count(*) AS n FROM work_items WHERE status = 'leased'").get() as { n: number }).n;
const statusOf = (store: Store, id: string) =>
  (
    store.db.prepare("SELECT status FROM work_items WHERE id = ?").get(Number(id)) as
      | { status: string }
      | undefined
  )?.status;

async function rejectsLeaseLost(p: Promise<unknown>, lease: Lease) {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof LonghaulError);
    assert.equal(e.code, "LEASE_LOST");
    assert.equal(e.message, leaseLost(lease).message);
    return true;
  });
}

describe("complete folding", () => {
  test("calls made together are one operation in one commit; each caller gets its own answer", async () => {
    const { store, folds } = await open();
    await store.enqueue([
      ...Array.from({ length: 4 }, (_, i) => ({
        kind: "maintenance" as const,
        tenantId: null,
        payload: { i },
      })),
      { kind: "maintenance", tenantId: null, payload: { keyed: true }, concurrencyKey: "task:k" },
    ]);
    const w = await store.claim("w", 4, 30_000);
    const [v] = await store.claim("v", 1, 30_000);
    assert.equal(w.length, 4);
    assert.ok(v);
    let woken = 0;
    store.onWork(() => woken++);
    const before = store.commits;
    const lease = (id: string, owner: string): Lease => ({ itemId: id, owner });
    const calls: [Lease, boolean][] = [
      [lease(w[0]!.id, "w"), true],
      [lease(w[1]!.id, "w"), true],
      // The same lease again finds its item gone, as one call after the other would.
      [lease(w[0]!.id, "w"), false],
      // Another holder's item: refused, and left leased to its holder.
      [lease(v.id, "w"), false],
      [lease("not-an-id", "w"), false],
      [lease("9".repeat(16), "w"), false],
      [lease(v.id, "v"), true],
      [lease(w[2]!.id, "w"), true],
    ];
    const answers = calls.map(([l]) => store.complete(l));
    for (const [i, [l, ok]] of calls.entries()) {
      if (ok) await answers[i];
      else await rejectsLeaseLost(answers[i]!, l);
    }
    assert.deepEqual(folds(), [calls.length], "one fold carried every call");
    assert.equal(store.commits - before, 1, "one commit");
    assert.equal(leased(store), 1, "only the item nobody completed is still leased");
    assert.equal(statusOf(store, w[3]!.id), "leased");
    const keyed = [...w, v].find((i) => (i.payload as { keyed?: boolean }).keyed)!;
    assert.equal(statusOf(store, keyed.id), keyed.id === w[3]!.id ? "leased" : undefined);
    if (keyed.id !== w[3]!.id) assert.ok(woken > 0, "completing a keyed item wakes the workers");
    await store.close();
  });

  test("a complete after another write keeps its place: the writes run in the order they were made", async () => {
    const { store, folds } = await open();
    await store.enqueue(
      Array.from({ length: 4 }, (_, i) => ({
        kind: "maintenance" as const,
        tenantId: null,
        payload: { i },
      })),
    );
    const items = await store.claim("w", 4, 30_000);
    const [a, b, c, d] = items.map((i) => ({ itemId: i.id, owner: "w" }));
    // fail, then complete, of one item: the retry wins and the complete finds no lease.
    const failed = store.fail(a!, "boom", Date.now());
    const late = store.complete(a!);
    // complete, then fail, of another: the complete wins.
    const done = store.complete(b!);
    const lateFail = store.fail(b!, "boom", Date.now());
    // Completes on either side of another write go in two folds.
    const first = store.complete(c!);
    const extended = store.extendLease(d!, 60_000);
    const second = store.complete(d!);
    // A complete is answered at COMMIT, a fail once durable: each answer is awaited from now.
    const refused = [rejectsLeaseLost(late, a!), rejectsLeaseLost(lateFail, b!)];
    assert.equal(await failed, "retry");
    await done;
    await Promise.all(refused);
    await Promise.all([first, extended, second]);
    assert.equal(statusOf(store, a!.itemId), "pending");
    for (const l of [b, c, d]) assert.equal(statusOf(store, l!.itemId), undefined);
    // The completes of a and b are next to each other and share a fold; those of c and d
    // have a write between them. No complete jumped over another write.
    assert.deepEqual(folds(), [2, 1, 1]);
    await store.close();
  });
});
