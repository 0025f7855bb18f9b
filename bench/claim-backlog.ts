/**
 * Claim time with one tenant's backlog queued ahead of another tenant's single item, on the
 * store given: `node --import tsx bench/claim-backlog.ts sqlite|postgres://… [backlog]`.
 * Prints the mean and worst claim time and how many of the backlog's items went before the
 * other tenant's item.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "pg";
import { ManualClock } from "../src/core/clock.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/store.ts";

const target = process.argv[2] ?? "sqlite";
const backlog = Number(process.argv[3] ?? 10_000);
const concurrency = 8;
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const dir = mkdtempSync(join(tmpdir(), "claim-bench-"));
let store: Store;
let schema: string | null = null;
if (target === "sqlite") {
  store = new SqliteStore({ path: join(dir, "bench.db"), clock });
} else {
  schema = `bench_${Date.now().toString(36)}`;
  const url = new URL(target);
  url.searchParams.set("schema", schema);
  store = new PostgresStore({ url: url.toString(), clock });
}
await store.migrate();
const a = await store.createTenant({ name: "a", keyHash: `a-${Math.random()}` });
const b = await store.createTenant({ name: "b", keyHash: `b-${Math.random()}` });
for (let i = 0; i < backlog; i += 1000) {
  await store.enqueue(
    Array.from({ length: Math.min(1000, backlog - i) }, (_, j) => ({
      kind: "advance" as const,
      tenantId: a.id,
      payload: { taskId: `a${i + j}` },
      dedupeKey: `advance:a${i + j}`,
      concurrencyKey: `task:a${i + j}`,
    })),
  );
}
clock.advance(1);
await store.enqueue([{ kind: "advance", tenantId: b.id, payload: {}, concurrencyKey: "task:b" }]);
const times: number[] = [];
let before = 0;
let sawB = false;
for (let round = 0; round < 50; round++) {
  const t0 = performance.now();
  const items = await store.claim("bench", concurrency, 30_000);
  times.push(performance.now() - t0);
  for (const it of items) {
    if (it.tenantId === b.id) sawB = true;
    else if (!sawB) before++;
    await store.complete({ itemId: it.id, owner: "bench" });
  }
}
const mean = times.reduce((x, y) => x + y, 0) / times.length;
console.log(
  `${target.split(":")[0]}: backlog ${backlog}, claim of ${concurrency}: mean ${mean.toFixed(2)} ms, worst ${Math.max(...times).toFixed(2)} ms; ` +
    `${sawB ? `B's item after ${before} of A's` : `B's item not claimed in ${before} of A's`}`,
);
await store.close();
if (schema) {
  const client = new Client({ connectionString: target });
  await client.connect();
  await client.query(`DROP SCHEMA ${schema} CASCADE`);
  await client.end();
}
rmSync(dir, { recursive: true, force: true });
