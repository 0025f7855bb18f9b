import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client } from "pg";
import { CLAIM } from "../src/store/postgres/claim.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { pgAvailableOrReport, pgBaseUrl, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";

const unreachable = await pgUnreachable();

if (pgAvailableOrReport(unreachable, "PostgreSQL claim plan tests")) {
  const { fresh } = pgTestSchemas();

  interface PlanNode {
    "Subplan Name"?: string;
    "Shared Hit Blocks": number;
    "Shared Read Blocks": number;
    "Actual Rows": number;
    Plans?: PlanNode[];
  }
  const find = (n: PlanNode, name: string): PlanNode | undefined =>
    n["Subplan Name"] === name ? n : n.Plans?.map((p) => find(p, name)).find(Boolean);
  const pages = (n: PlanNode) => n["Shared Hit Blocks"] + n["Shared Read Blocks"];
  /**
   * Pages a statement touches, read off EXPLAIN ANALYZE, rolled back: all of it, or of the
   * named part only.
   */
  const pagesOf = async (c: Client, sql: string, params: unknown[], part?: string) => {
    await c.query("BEGIN");
    try {
      const r = await c.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`,
        params,
      );
      const plan = r.rows[0]!["QUERY PLAN"][0].Plan;
      const node = part ? find(plan, part) : plan;
      assert.ok(node, `no ${part} in the plan`);
      return { pages: pages(node), rows: plan["Actual Rows"] };
    } finally {
      await c.query("ROLLBACK");
    }
  };
  /** The seek that finds the first lane: it walks the dead entries at the front of the index. */
  const LANE_SEEK = `SELECT coalesce(tenant_id, '') FROM work_items WHERE status = 'pending'
                      ORDER BY coalesce(tenant_id, ''), run_at, id LIMIT 1`;

  /** A migrated store on a fresh schema and a plain connection to that schema, for `fn`. */
  const onFreshSchema = async (
    fn: (store: PostgresStore, c: Client, schema: string) => Promise<void>,
  ): Promise<void> => {
    const schema = fresh();
    const store = new PostgresStore({ url: pgUrl(schema) });
    await store.migrate();
    const c = new Client({ connectionString: pgBaseUrl, options: `-c search_path=${schema}` });
    await c.connect();
    try {
      await fn(store, c, schema);
    } finally {
      await c.end();
      await store.close();
    }
  };

  describe("postgres claim", () => {
    test("work_leased_key holds keyed leases only, and work_items is vacuumed after a fixed number of rows", () =>
      onFreshSchema(async (store, c, schema) => {
        const index = await c.query<{ indexdef: string }>(
          "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'work_leased_key'",
          [schema],
        );
        assert.match(index.rows[0]!.indexdef, /^CREATE UNIQUE INDEX .*WHERE .*concurrency_key IS NOT NULL/);
        const table = await c.query<{ reloptions: string[] }>(
          "SELECT reloptions FROM pg_class WHERE oid = $1::regclass",
          [`${schema}.work_items`],
        );
        assert.ok(table.rows[0]!.reloptions.includes("autovacuum_vacuum_threshold=5000"));
        assert.ok(table.rows[0]!.reloptions.includes("autovacuum_vacuum_scale_factor=0"));
        // Two items of one key are still never leased together.
        await store.enqueue([
          { kind: "timeout", tenantId: null, payload: {}, concurrencyKey: "k" },
          { kind: "timeout", tenantId: null, payload: {}, concurrencyKey: "k" },
        ]);
        assert.equal((await store.claim("w", 10, 30_000)).length, 1);
      }));

    test("a claim locks no more of a lone lane than its limit: a claim running beside it takes the rest", () =>
      onFreshSchema(async (store, c) => {
        await store.enqueue(
          Array.from({ length: 4 }, (_, i) => ({ kind: "timeout" as const, tenantId: null, payload: { i } })),
        );
        // A claim of 2 whose transaction stays open holds the row locks it took.
        await c.query("BEGIN");
        try {
          const first = await c.query(CLAIM, [Date.now(), 2, "a", 30_000, null]);
          assert.equal(first.rows.length, 2);
          // SKIP LOCKED passes over what the open claim locked: the other two are free.
          const second = await store.claim("b", 2, 30_000);
          assert.equal(second.length, 2, "the open claim locked rows beyond its limit");
        } finally {
          await c.query("ROLLBACK");
        }
      }));

    test("a claim walks the finished items at the front of a lane once, not once per step", () =>
      onFreshSchema(async (store, c) => {
        const items = (n: number) =>
          Array.from({ length: n }, (_, i) => ({ kind: "timeout" as const, tenantId: null, payload: { i } }));
        const measure = async () => {
          // Twice: the first run marks the dead index entries it passes, as a running queue's
          // claims keep doing; the second shows the steady cost.
          await pagesOf(c, CLAIM, [Date.now(), 16, "probe", 30_000, null]);
          // The choosing of the items (lanes, heads, due), not the leasing of the ones chosen.
          const claim = await pagesOf(c, CLAIM, [Date.now(), 16, "probe", 30_000, null], "CTE chosen");
          const seek = await pagesOf(c, LANE_SEEK, []);
          return { claim, seek };
        };
        await store.enqueue(items(100));
        const before = await measure();
        assert.equal(before.claim.rows, 16);

        // These and 20,000 more run and finish; no VACUUM has removed their index entries
        // yet, which lie at the front of the lane, before the next 100.
        for (let i = 0; i < 20_000; i += 1000) await store.enqueue(items(1000));
        for (;;) {
          const claimed = await store.claim("w", 500, 30_000);
          if (claimed.length === 0) break;
          await Promise.all(claimed.map((it) => store.complete({ itemId: it.id, owner: "w" })));
        }
        await store.enqueue(items(100));
        const afterwards = await measure();
        assert.equal(afterwards.claim.rows, 16);

        const walk = afterwards.seek.pages - before.seek.pages;
        const grown = afterwards.claim.pages - before.claim.pages;
        assert.ok(walk > 20, `the dead entries span ${walk} pages`);
        // Walking them once per step (finding the lane, its head, then its due items) would
        // grow the claim by three walks.
        assert.ok(grown < 1.5 * walk, `the claim grew by ${grown} pages; one walk is ${walk}`);
      }));
  });
}
