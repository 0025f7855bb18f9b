import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { Client } from "pg";
import { ManualClock } from "../src/core/clock.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { httpStatusOf } from "../src/http/error-status.ts";
import { statsSql } from "../src/store/ops/stats-ops.ts";
import { knownMigrations } from "../src/store/postgres/migrate.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import type { Lease, Store, WorkItem } from "../src/store/store.ts";
import { waitFor } from "./helpers.ts";
import { pgAvailableOrReport, pgBaseUrl, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";
import { storeContract } from "./store-contract.ts";

const baseUrl = pgBaseUrl;
const unreachable = await pgUnreachable();

const urlFor = pgUrl;

if (pgAvailableOrReport(unreachable, "PostgreSQL store tests")) {
  const { fresh: freshSchema } = pgTestSchemas();

  storeContract("postgres", async (clock) => {
    const store = new PostgresStore({ url: urlFor(freshSchema()), clock });
    await store.migrate();
    return store;
  });

  describe("postgres store", () => {
    /** Two stores on one schema, each with its own pool, as two processes would have. */
    const twoStores = async (opts: { clock?: ManualClock; appName?: string } = {}) => {
      const schema = freshSchema();
      const clock = opts.clock ?? new ManualClock(Date.UTC(2026, 0, 1));
      const a = new PostgresStore({ url: urlFor(schema, opts.appName), clock });
      const b = new PostgresStore({ url: urlFor(schema, opts.appName), clock });
      await Promise.all([a.migrate(), b.migrate()]);
      const tenant = await a.createTenant({ name: "acme", keyHash: `hash-${schema}` });
      return { schema, clock, a, b, tenant, close: () => Promise.all([a.close(), b.close()]) };
    };
    const submit = (store: Store, tenantId: string, clientRequestId: string | null = null) =>
      store.submitTask({
        tenantId,
        type: "demo.echo",
        input: { text: "hi" },
        clientRequestId,
        userId: null,
        traceId: null,
      });
    const leaseOf = (item: WorkItem, owner: string): Lease => ({ itemId: item.id, owner });

    test("the task stats and the created-at range read their indexes", async () => {
      const { schema, close } = await twoStores();
      const admin = new Client({ connectionString: baseUrl });
      await admin.connect();
      try {
        await admin.query(`SET search_path TO "${schema}"`);
        // The tables are empty: without this the planner rightly prefers reading them whole.
        await admin.query("SET enable_seqscan = off");
        const plan = async (sql: string, params: unknown[]) => {
          let i = 0;
          const text = sql.replace(/\?/g, () => `$${++i}`);
          const r = await admin.query(`EXPLAIN ${text}`, params);
          return r.rows.map((x) => x["QUERY PLAN"]).join("\n");
        };
        assert.match(await plan(statsSql.submitted, ["tn", 0, 1, 10]), /tasks_by_tenant_created/);
        assert.match(await plan(statsSql.ended, ["tn", 0, 1, 10]), /tasks_by_tenant_ended/);
        assert.match(
          await plan("SELECT * FROM tasks WHERE tenant_id = ? AND created_at >= ? AND created_at < ?", [
            "tn",
            0,
            1,
          ]),
          /tasks_by_tenant_created/,
        );
      } finally {
        await admin.end();
        await close();
      }
    });

    test("two processes migrating at once apply each migration once", async () => {
      const { schema, close } = await twoStores();
      const admin = new Client({ connectionString: baseUrl });
      await admin.connect();
      const r = await admin.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
      await admin.end();
      assert.deepEqual(
        r.rows.map((x) => x.version),
        knownMigrations().map((m) => m.version),
      );
      await close();
    });

    test("a database with a newer schema is refused", async () => {
      const schema = freshSchema();
      const store = new PostgresStore({ url: urlFor(schema) });
      assert.equal((await store.migrate()).from, 0);
      await store.close();
      const admin = new Client({ connectionString: baseUrl });
      await admin.connect();
      await admin.query(
        `INSERT INTO "${schema}".schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)`,
      );
      await admin.end();
      const again = new PostgresStore({ url: urlFor(schema) });
      await assert.rejects(
        again.migrate(),
        (e: unknown) => e instanceof LonghaulError && e.code === "SCHEMA_TOO_NEW",
      );
      await again.close();
    });

    test("two processes racing claim on 200 items never lease one item twice", async () => {
      const { a, b, tenant, close } = await twoStores();
      // Half the items share ten concurrency keys: those must also never be held two at a time.
      await a.enqueue(
        Array.from({ length: 200 }, (_, i) => ({
          kind: "timeout" as const,
          tenantId: tenant.id,
          payload: { i },
          concurrencyKey: i % 2 === 0 ? `k${i % 20}` : null,
        })),
      );
      const seen = new Set<string>();
      const heldKeys = new Set<string>();
      const worker = async (store: Store, owner: string) => {
        for (let idle = 0; idle < 3; ) {
          const items = await store.claim(owner, 5, 60_000);
          if (items.length === 0) {
            idle++;
            await new Promise((r) => setTimeout(r, 5));
            continue;
          }
          idle = 0;
          for (const it of items) {
            assert.ok(!seen.has(it.id), `item ${it.id} was leased twice`);
            seen.add(it.id);
            const key = (it.payload.i as number) % 2 === 0 ? `k${(it.payload.i as number) % 20}` : null;
            if (key) {
              assert.ok(!heldKeys.has(key), `two items of ${key} were leased at once`);
              heldKeys.add(key);
            }
          }
          await new Promise((r) => setImmediate(r));
          for (const it of items) {
            const key = (it.payload.i as number) % 2 === 0 ? `k${(it.payload.i as number) % 20}` : null;
            if (key) heldKeys.delete(key);
            await store.complete(leaseOf(it, owner));
          }
        }
      };
      await Promise.all([
        ...Array.from({ length: 4 }, (_, i) => worker(a, `a${i}`)),
        ...Array.from({ length: 4 }, (_, i) => worker(b, `b${i}`)),
      ]);
      assert.equal(seen.size, 200);
      assert.equal(await a.nextRunAt(), null);
      await close();
    });

    test("one claim never takes two pending items of one concurrency key", async () => {
      const { a, close } = await twoStores();
      await a.enqueue([
        { kind: "timeout", tenantId: null, payload: { n: 1 }, concurrencyKey: "same" },
        { kind: "timeout", tenantId: null, payload: { n: 2 }, concurrencyKey: "same" },
        { kind: "timeout", tenantId: null, payload: { n: 3 } },
      ]);
      const items = await a.claim("w", 10, 1000);
      assert.deepEqual(items.map((i) => i.payload.n).sort(), [1, 3]);
      await close();
    });

    test("one claim takes the tenants' due items in turn, not one tenant's burst first", async () => {
      const { a, close } = await twoStores();
      await a.enqueue([
        ...Array.from({ length: 6 }, (_, i) => ({
          kind: "timeout" as const,
          tenantId: "burst",
          payload: { i },
        })),
        { kind: "timeout", tenantId: "quiet", payload: { i: 0 } },
        { kind: "timeout", tenantId: "quiet", payload: { i: 1 } },
      ]);
      const items = await a.claim("w", 4, 1000);
      assert.deepEqual(
        items.map((i) => `${i.tenantId}:${i.payload.i}`),
        ["burst:0", "quiet:0", "burst:1", "quiet:1"],
      );
      await close();
    });

    test("two processes racing submitTask with one client_request_id create one task", async () => {
      const { a, b, tenant, close } = await twoStores();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => submit(i % 2 === 0 ? a : b, tenant.id, "same-request")),
      );
      assert.equal(new Set(results.map((r) => r.task.id)).size, 1);
      assert.equal(results.filter((r) => r.created).length, 1);
      assert.equal((await a.listTasks(tenant.id, { limit: 50 })).tasks.length, 1);
      await close();
    });

    test("an early event and its job's creation racing across processes always end applied", async () => {
      const { a, b, tenant, close } = await twoStores();
      const claimKind = async (store: Store, kind: WorkItem["kind"]) => {
        const items = await store.claim("w", 10, 60_000);
        const it = items.find((i) => i.kind === kind);
        assert.ok(it, `expected a ${kind} item`);
        for (const other of items) if (other !== it) await store.complete(leaseOf(other, "w"));
        return it;
      };
      for (let i = 0; i < 50; i++) {
        const { task } = await submit(a, tenant.id);
        const adv = await claimKind(a, "advance");
        assert.equal(await a.beginAdvance(leaseOf(adv, "w"), task.id), "started");
        await a.registerWait(leaseOf(adv, "w"), task.id, {
          kind: "job",
          stepId: "echo",
          position: 0,
          provider: "sim",
          input: null,
          timeoutMs: null,
          pollAfterMs: null,
          cancelOnTimeout: true,
        });
        await a.finishAdvance(leaseOf(adv, "w"), task.id, { kind: "suspended" });
        const dispatch = await claimKind(a, "dispatch");
        const ext = `ext-race-${i}`;
        const ev = await b.recordEvent({
          source: "sim",
          provider: "sim",
          eventId: `e-${i}`,
          body: Buffer.from("{}"),
        });
        const apply = await claimKind(b, "apply_event");
        const event = { eventId: `e-${i}`, type: "job.succeeded" as const, jobId: ext, output: i };
        await Promise.all([
          a.recordJobCreated(leaseOf(dispatch, "w"), String(dispatch.payload.jobId), ext, "created"),
          b.applyJobEvent(leaseOf(apply, "w"), ev.id, "sim", event),
        ]);
        // Whatever the order, the event is applied, at once or through the item the creation re-queued.
        for (;;) {
          const items = await b.claim("w", 10, 60_000);
          if (items.length === 0) break;
          for (const it of items) {
            if (it.kind === "apply_event") {
              await b.applyJobEvent(leaseOf(it, "w"), String(it.payload.inboxId), "sim", event);
            } else {
              await b.complete(leaseOf(it, "w"));
            }
          }
        }
        assert.equal((await a.getInboxEvent(ev.id))?.status, "applied", `round ${i}`);
        assert.equal((await a.getTask(tenant.id, task.id))?.steps[0]?.status, "succeeded", `round ${i}`);
      }
      await close();
    });

    test("racing submits across processes never pass a tenant's tasks_per_day", async () => {
      const { a, b, close } = await twoStores();
      const limited = await a.createTenant({
        name: "small",
        keyHash: "hash-small",
        quotas: { tasks_per_day: 5 },
      });
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => submit(i % 2 === 0 ? a : b, limited.id)),
      );
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 5);
      for (const r of results) {
        if (r.status === "rejected") assert.equal((r.reason as LonghaulError).code, "QUOTA_EXCEEDED");
      }
      assert.equal((await a.listTasks(limited.id, { limit: 50 })).tasks.length, 5);
      await close();
    });

    test("two processes admitting jobs at once never both take a tenant's last job slot", async () => {
      const { a, b, close } = await twoStores();
      for (let round = 0; round < 10; round++) {
        const t = await a.createTenant({
          name: `one-slot-${round}`,
          keyHash: `hash-slot-${round}`,
          quotas: { max_concurrent_jobs: 1 },
        });
        const dispatches: WorkItem[] = [];
        for (const stepId of ["x", "y"]) {
          const { task } = await submit(a, t.id);
          const [adv] = await a.claim("w", 1, 60_000);
          assert.equal(adv?.kind, "advance");
          assert.equal(await a.beginAdvance(leaseOf(adv!, "w"), task.id), "started");
          await a.registerWait(leaseOf(adv!, "w"), task.id, {
            kind: "job",
            stepId,
            position: 0,
            provider: "sim",
            input: null,
            timeoutMs: null,
            pollAfterMs: null,
            cancelOnTimeout: true,
          });
          await a.finishAdvance(leaseOf(adv!, "w"), task.id, { kind: "suspended" });
          const [d] = await a.claim("w", 1, 60_000);
          assert.equal(d?.kind, "dispatch");
          dispatches.push(d!);
        }
        const answers = await Promise.all(
          dispatches.map((d, i) =>
            (i === 0 ? a : b).acquireJobSlot(leaseOf(d, "w"), String(d.payload.jobId)),
          ),
        );
        assert.deepEqual(answers.sort(), ["ok", "parked"], `round ${round}`);
        for (const d of dispatches) await a.complete(leaseOf(d, "w")).catch(() => {});
      }
      await close();
    });

    test("two processes admitting jobs at once never both fit in a tenant's token budget", async () => {
      const { a, b, close } = await twoStores();
      for (let round = 0; round < 10; round++) {
        const t = await a.createTenant({
          name: `budget-${round}`,
          keyHash: `hash-budget-${round}`,
          quotas: { token_budget: 100 },
        });
        const dispatches: WorkItem[] = [];
        for (const stepId of ["x", "y"]) {
          const { task } = await submit(a, t.id);
          const [adv] = await a.claim("w", 1, 60_000);
          assert.equal(adv?.kind, "advance");
          assert.equal(await a.beginAdvance(leaseOf(adv!, "w"), task.id), "started");
          await a.registerWait(leaseOf(adv!, "w"), task.id, {
            kind: "job",
            stepId,
            position: 0,
            provider: "sim",
            input: null,
            timeoutMs: null,
            pollAfterMs: null,
            cancelOnTimeout: true,
            maxTokens: 60,
          });
          await a.finishAdvance(leaseOf(adv!, "w"), task.id, { kind: "suspended" });
          const [d] = await a.claim("w", 1, 60_000);
          assert.equal(d?.kind, "dispatch");
          dispatches.push(d!);
        }
        const answers = await Promise.all(
          dispatches.map((d, i) =>
            (i === 0 ? a : b).acquireJobSlot(leaseOf(d, "w"), String(d.payload.jobId)),
          ),
        );
        assert.deepEqual(answers.sort(), ["ok", "parked"], `round ${round}`);
        assert.equal((await a.getTenant(t.id))!.tokensReserved, 60, `round ${round}`);
        for (const d of dispatches) await a.complete(leaseOf(d, "w")).catch(() => {});
      }
      await close();
    });

    test("onWork and onTaskEvents fire for a commit made through another process", async () => {
      const { a, b, tenant, close } = await twoStores();
      let woken = 0;
      const events: [string, number][] = [];
      b.onWork(() => woken++);
      b.onTaskEvents((t, seq) => events.push([t, seq]));
      // The first call says the LISTEN connection is up.
      await waitFor(() => woken > 0, 5000, "the LISTEN connection");
      const before = woken;
      await submit(a, tenant.id);
      await waitFor(() => woken > before, 5000, "a NOTIFY from the other store");
      await waitFor(() => events.length > 0, 5000, "a task event NOTIFY");
      const [latest] = await a.taskEvents(tenant.id, 0, 10);
      assert.deepEqual(events, [[tenant.id, latest!.seq]]);
      await close();
    });

    test("each task event is announced once on every process, its own included", async () => {
      const { a, b, tenant, close } = await twoStores();
      const seen = { a: [] as number[], b: [] as number[] };
      let listening = 0;
      a.onWork(() => listening++);
      b.onWork(() => listening++);
      a.onTaskEvents((_t, seq) => seen.a.push(seq));
      b.onTaskEvents((_t, seq) => seen.b.push(seq));
      await waitFor(() => listening >= 2, 5000, "both LISTEN connections");
      await Promise.all(Array.from({ length: 10 }, (_, i) => submit(i % 2 === 0 ? a : b, tenant.id)));
      const all = (await a.taskEvents(tenant.id, 0, 100)).map((e) => e.seq);
      assert.equal(all.length, 10);
      await waitFor(() => seen.a.length >= 10 && seen.b.length >= 10, 5000, "every event on both");
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(
        [...seen.a].sort((x, y) => x - y),
        all,
      );
      assert.deepEqual(
        [...seen.b].sort((x, y) => x - y),
        all,
      );
      await close();
    });

    test("after its connections are killed, the store works again and LISTENs again", async () => {
      const appName = `lh_test_${randomBytes(4).toString("hex")}`;
      const { a, b, tenant, close } = await twoStores({ appName });
      const other = new PostgresStore({ url: urlFor(a.schema) });
      let woken = 0;
      a.onWork(() => woken++);
      await waitFor(() => woken > 0, 5000, "the LISTEN connection");
      await submit(a, tenant.id);
      const admin = new Client({ connectionString: baseUrl });
      await admin.connect();
      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1`,
        [appName],
      );
      await admin.end();
      assert.ok(killed.rowCount! >= 2, "expected the pool and the LISTEN connection to be killed");
      const beforeKill = woken;
      // Pooled connections that died are replaced without the caller seeing an error.
      assert.equal((await submit(a, tenant.id)).created, true);
      assert.equal((await b.listTasks(tenant.id, { limit: 10 })).tasks.length, 2);
      // One call for that local commit, one when LISTEN is back: work may have come meanwhile.
      await waitFor(() => woken >= beforeKill + 2, 10_000, "the LISTEN connection to come back");
      assert.equal(await a.health(), "ok");
      const beforeNotify = woken;
      await submit(other, tenant.id);
      await waitFor(() => woken > beforeNotify, 5000, "a NOTIFY after the reconnect");
      await other.close();
      await close();
    });

    test("a database that cannot be reached is STORE_UNAVAILABLE, and health says degraded", async () => {
      const store = new PostgresStore({ url: "postgres://postgres@127.0.0.1:1/test" });
      await assert.rejects(
        store.submitTask({
          tenantId: "t",
          type: "x",
          input: null,
          clientRequestId: null,
          userId: null,
          traceId: null,
        }),
        (e: unknown) =>
          e instanceof LonghaulError && e.code === "STORE_UNAVAILABLE" && httpStatusOf(e) === 503,
      );
      await assert.rejects(
        store.migrate(),
        (e: unknown) => e instanceof LonghaulError && e.code === "STORE_UNAVAILABLE",
      );
      assert.equal(await store.health(), "degraded");
      await store.close();
    });

    test("releaseOrphanedLeases leaves other processes' leases alone", async () => {
      const { a, b, tenant, close } = await twoStores();
      await submit(a, tenant.id);
      const [item] = await a.claim("a", 1, 60_000);
      assert.ok(item);
      assert.equal(await b.releaseOrphanedLeases(), 0);
      await a.complete(leaseOf(item, "a"));
      await close();
    });
  });
}
