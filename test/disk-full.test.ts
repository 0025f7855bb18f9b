import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmdirSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client } from "pg";
import { LonghaulError } from "../src/core/errors.ts";
import { defineTask } from "../src/core/task-type.ts";
import { httpStatusOf } from "../src/http/error-status.ts";
import { resourceError, unavailable } from "../src/store/postgres/pool.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { NewTask } from "../src/store/store.ts";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";
import { sleep, tempDir, waitFor } from "./helpers.ts";
import {
  dropSchemas,
  freshSchemaName,
  pgAvailableOrReport,
  pgBaseUrl,
  pgUnreachable,
  pgUrl,
} from "./pg-env.ts";
import { SIM_SECRET, type Stack, startStack } from "./stack.ts";

/**
 * A data directory that can be made full and freed again. For real: a small tmpfs mounted for
 * the test, filled with a filler file until the kernel answers ENOSPC. Where mounting is not
 * allowed, SQLite's `max_page_count` is pinned at the file's current size instead, which makes
 * SQLite answer SQLITE_FULL exactly as a full disk does.
 */
interface Disk {
  dir: string;
  how: "tmpfs" | "max_page_count";
  fill(db: import("better-sqlite3").Database): void;
  free(db: import("better-sqlite3").Database): void;
  cleanup(): void;
}

function tmpfsDisk(): Disk | null {
  const dir = mkdtempSync(join(tmpdir(), "longhaul-disk-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", dir], { stdio: "ignore" });
  } catch {
    rmdirSync(dir);
    return null;
  }
  const filler = join(dir, "filler");
  return {
    dir,
    how: "tmpfs",
    fill(db) {
      // An empty WAL first: SQLite reuses a WAL's space from its start after a checkpoint, so a
      // small commit (a claim) could otherwise land in space the file already holds.
      db.pragma("wal_checkpoint(TRUNCATE)");
      const fd = openSync(filler, "w");
      try {
        // Big blocks first, then single bytes, until not one more byte fits.
        for (const size of [64 * 1024, 4096, 1]) {
          const block = Buffer.alloc(size, 1);
          for (;;) {
            try {
              writeSync(fd, block);
            } catch (err) {
              if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
              break;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
    cleanup() {
      execFileSync("umount", [dir]);
      rmdirSync(dir);
    },
  };
}

/**
 * Resolves once the store's connection is in no transaction (the store's reads of a turn
 * share one until the turn ends), so that what `fill` and `free` run on it right after, in
 * the same synchronous stretch, is not inside one.
 */
async function outsideTransaction(db: import("better-sqlite3").Database): Promise<void> {
  while (db.inTransaction) await new Promise((r) => setImmediate(r));
}

function pageCountDisk(): Disk {
  const tmp = tempDir("longhaul-disk-");
  return {
    dir: tmp.dir,
    how: "max_page_count",
    fill(db) {
      // The file may not grow, and its free pages are taken by a filler table.
      db.exec("CREATE TABLE IF NOT EXISTS test_disk_filler (b BLOB)");
      db.pragma(`max_page_count = ${db.pragma("page_count", { simple: true })}`);
      const insert = db.prepare("INSERT INTO test_disk_filler VALUES (randomblob(?))");
      for (const size of [4000, 500, 50]) {
        for (;;) {
          try {
            insert.run(size);
          } catch (err) {
            if ((err as { code?: string }).code !== "SQLITE_FULL") throw err;
            break;
          }
        }
      }
    },
    free(db) {
      db.pragma("max_page_count = 1073741823");
      db.exec("DELETE FROM test_disk_filler");
    },
    cleanup: tmp.cleanup,
  };
}

const ended = (s: string) => ["succeeded", "failed", "canceled", "timed_out"].includes(s);

async function json(res: Response): Promise<{ status: number; body: any; retryAfter: string | null }> {
  const text = await res.text();
  return {
    status: res.status,
    body: text ? JSON.parse(text) : null,
    retryAfter: res.headers.get("retry-after"),
  };
}

const health = async (stack: Stack) => json(await fetch(`${stack.url}/healthz`));

/**
 * Bodies big enough to need new pages: under `max_page_count` a small row can still fit in
 * space left on a page, where on a full disk every commit needs room in the WAL.
 */
const pad = "x".repeat(16_000);

function signedHook(stack: Stack, eventId: string) {
  const body = JSON.stringify({ id: eventId, type: "job.running", data: { job_id: "job_unknown", pad } });
  const ts = Math.floor(Date.now() / 1000);
  return fetch(`${stack.url}/hooks/sim`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": eventId,
      "webhook-timestamp": String(ts),
      "webhook-signature": signStandardWebhook({ id: eventId, timestampS: ts, body, secret: SIM_SECRET }),
    },
    body,
  });
}

const postJson = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/**
 * A task whose timer falls due while the disk is full, so the worker has work it cannot claim:
 * a nap long enough for that even on a slow machine.
 */
const nap = defineTask("test.nap", async (_input, step) => {
  await step.sleep("nap", "1s");
  return "rested";
});

describe("a full disk under the SQLite data directory", () => {
  let disk: Disk;
  let stack: Stack;
  before(async () => {
    disk = tmpfsDisk() ?? pageCountDisk();
    if (disk.how !== "tmpfs") {
      console.warn("\n!!! tmpfs could not be mounted here: the full disk is SQLite's max_page_count.\n");
    }
    // Webhooks the simulator gives up on while the disk is full are made up by the reconciler.
    stack = await startStack({
      dbPath: join(disk.dir, "longhaul.db"),
      pollAfterMs: 1000,
      taskTypes: [nap],
    });
  });
  after(async () => {
    try {
      await outsideTransaction(stack.store.db);
      disk.free(stack.store.db);
      await stack.close();
    } finally {
      disk.cleanup();
    }
  });

  test("answers 503 STORAGE_FULL with Retry-After, reports /healthz degraded, and every accepted task succeeds once space is back", async () => {
    assert.deepEqual((await health(stack)).body, { status: "ok", store: "ok" });
    const accepted: string[] = [];
    // Claims the store refuses for lack of space, the first even if it began before the fill.
    let refusedClaims = 0;
    const claim = stack.store.claim.bind(stack.store);
    stack.store.claim = async (...args) => {
      try {
        return await claim(...args);
      } catch (err) {
        if (err instanceof LonghaulError && err.code === "STORAGE_FULL") refusedClaims++;
        throw err;
      }
    };

    // Accepted before the disk fills: one waits on a callback, one is a job in flight.
    const cb = await stack.api("/v1/tasks", { body: { type: "demo.callback", input: {} } });
    assert.equal(cb.status, 202);
    accepted.push(cb.body.task_id);
    const callbackUrl = await waitFor(
      async () => {
        const t = await stack.api(`/v1/tasks/${cb.body.task_id}`);
        return t.body.steps?.find((s: { id: string }) => s.id === "callback")?.callback_url as
          | string
          | undefined;
      },
      10_000,
      "the callback URL",
    );
    const napping = await stack.api("/v1/tasks", { body: { type: "test.nap", input: {} } });
    assert.equal(napping.status, 202);
    accepted.push(napping.body.task_id);
    await waitFor(
      async () => {
        const t = await stack.api(`/v1/tasks/${napping.body.task_id}`);
        return t.body.steps?.find((s: { id: string }) => s.id === "nap")?.status === "waiting";
      },
      10_000,
      "the nap to start",
    );
    const echo = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: "before", delay_ms: 300 } },
    });
    assert.equal(echo.status, 202);
    accepted.push(echo.body.task_id);

    await outsideTransaction(stack.store.db);
    disk.fill(stack.store.db);
    const refused = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: `during ${pad}` }, client_request_id: "during-1" },
    });
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, "STORAGE_FULL");
    assert.match(refused.body.error.message, /no space left/);
    assert.equal(refused.headers.get("retry-after"), "5");

    const h = await health(stack);
    assert.equal(h.status, 503);
    assert.deepEqual(h.body, { status: "degraded", store: "full" });

    const hook = await json(await signedHook(stack, "evt_disk_full"));
    assert.equal(hook.status, 503, JSON.stringify(hook.body));
    assert.equal(hook.body.error.code, "STORAGE_FULL");
    assert.equal(hook.retryAfter, "5");

    const posted = await json(await postJson(callbackUrl, { answer: 42, pad }));
    assert.equal(posted.status, 503, JSON.stringify(posted.body));
    assert.equal(posted.body.error.code, "STORAGE_FULL");
    assert.equal(posted.retryAfter, "5");

    // The worker keeps running, and backs off: after a claim refused for lack of space it
    // waits as long as Retry-After says before it tries again (a 200 ms pause made about ten).
    await sleep(3000);
    assert.ok(refusedClaims >= 1, "the nap's timer fell due and the worker tried to claim it");
    assert.ok(refusedClaims <= 2, `${refusedClaims} claims were refused in 3 s while the disk was full`);
    assert.deepEqual((await health(stack)).body, { status: "degraded", store: "full" });
    // Readiness says the same; liveness does not depend on the store, so no orchestrator
    // restarts a node for a full disk or a database outage.
    const ready = await json(await fetch(`${stack.url}/readyz`));
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.body, { status: "degraded", store: "full" });
    const live = await json(await fetch(`${stack.url}/livez`));
    assert.equal(live.status, 200);
    assert.deepEqual(live.body, { status: "ok" });

    await outsideTransaction(stack.store.db);
    disk.free(stack.store.db);
    const back = await waitFor(
      async () => {
        const r = await health(stack);
        return r.status === 200 ? r : null;
      },
      10_000,
      "/healthz to be ok again",
    );
    assert.deepEqual(back.body, { status: "ok", store: "ok" });

    // The refused submit is sent again as it was, and is taken now; so are new ones.
    const retried = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: `during ${pad}` }, client_request_id: "during-1" },
    });
    assert.equal(retried.status, 202, JSON.stringify(retried.body));
    accepted.push(retried.body.task_id);
    const later = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "after" } } });
    assert.equal(later.status, 202);
    accepted.push(later.body.task_id);
    assert.equal((await json(await signedHook(stack, "evt_disk_full"))).status, 200);
    assert.equal((await json(await postJson(callbackUrl, { answer: 42, pad }))).status, 200);

    for (const id of accepted) {
      const task = await waitFor(
        async () => {
          const r = await stack.api(`/v1/tasks/${id}`);
          return ended(r.body.status) ? r.body : null;
        },
        30_000,
        `task ${id} to end`,
      );
      assert.equal(task.status, "succeeded", JSON.stringify(task));
    }
    const outputs = await Promise.all(
      accepted.map(async (id) => (await stack.api(`/v1/tasks/${id}`)).body.output),
    );
    assert.deepEqual(outputs, [
      { answer: 42, pad },
      "rested",
      { text: "before" },
      { text: `during ${pad}` },
      { text: "after" },
    ]);
  });
});

const newTask = (tenantId: string, n: number): NewTask => ({
  tenantId,
  type: "demo.echo",
  input: { n, pad: "x".repeat(2000) },
  clientRequestId: null,
  userId: null,
  traceId: null,
});

const isStorageFull = (e: unknown) =>
  e instanceof LonghaulError &&
  e.code === "STORAGE_FULL" &&
  httpStatusOf(e) === 503 &&
  e.details?.retry_after_s === 5;

describe("the SQLite store at max_page_count", () => {
  test("refuses writes with STORAGE_FULL, says full until a write commits again, and keeps what it had", async () => {
    const tmp = tempDir();
    const store = new SqliteStore({ path: join(tmp.dir, "db.sqlite") });
    try {
      await store.migrate();
      const tenant = await store.createTenant({ name: "t", keyHash: "h" });
      await store.submitTask(newTask(tenant.id, 0));
      store.db.pragma(`max_page_count = ${store.db.pragma("page_count", { simple: true })}`);
      // A burst in one group commit: every write of it is refused alike, none half-written.
      const burst = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => store.submitTask(newTask(tenant.id, i + 1))),
      );
      assert.ok(
        burst.every((r) => r.status === "rejected" && isStorageFull(r.reason)),
        JSON.stringify(burst.map((r) => r.status)),
      );
      assert.equal(await store.health(), "full");
      assert.equal((await store.listTasks(tenant.id, { limit: 50 })).tasks.length, 1);
      store.db.pragma("max_page_count = 1073741823");
      assert.equal(await store.health(), "ok");
      await store.submitTask(newTask(tenant.id, 21));
      assert.equal((await store.listTasks(tenant.id, { limit: 50 })).tasks.length, 2);
    } finally {
      await store.close();
      tmp.cleanup();
    }
  });
});

describe("PostgreSQL insufficient-resources errors", () => {
  const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

  test("53100 disk_full is STORAGE_FULL; 53000, 53200, 53300 and an unreachable server are STORE_UNAVAILABLE; all 503 with Retry-After", () => {
    const full = resourceError(pgError("53100", 'could not extend file "base/1/2": No space left on device'));
    assert.ok(full && isStorageFull(full));
    assert.match(full.message, /No space left on device/);
    for (const code of ["53000", "53200", "53300"]) {
      const e = resourceError(pgError(code, "out of memory"));
      assert.equal(e?.code, "STORE_UNAVAILABLE", code);
      assert.equal(httpStatusOf(e), 503);
      assert.equal(e?.details?.retry_after_s, 5);
    }
    // An unreachable server (connection refused, too many connections at connect) likewise.
    assert.equal(unavailable(pgError("ECONNREFUSED", "connect ECONNREFUSED")).details?.retry_after_s, 5);
    assert.equal(resourceError(pgError("23505", "duplicate key")), null);
    assert.equal(resourceError(pgError("53400", "configuration limit exceeded")), null);
    assert.equal(resourceError(null), null);
  });
});

const unreachable = await pgUnreachable();
if (pgAvailableOrReport(unreachable, "PostgreSQL disk_full tests")) {
  describe("the PostgreSQL store when the server answers disk_full", () => {
    const schemas: string[] = [];
    after(() => dropSchemas(schemas));

    test("refuses writes with STORAGE_FULL, says full until a write commits again, and keeps what it had", async () => {
      const schema = freshSchemaName();
      schemas.push(schema);
      const store = new PostgresStore({ url: pgUrl(schema) });
      try {
        await store.migrate();
        const tenant = await store.createTenant({ name: "t", keyHash: "h" });
        await store.submitTask(newTask(tenant.id, 0));
        // The server's own disk_full, raised where a real one would be: on writing a row.
        const admin = new Client({ connectionString: pgBaseUrl });
        await admin.connect();
        try {
          await admin.query(`CREATE FUNCTION "${schema}".no_space() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION USING ERRCODE = 'disk_full', MESSAGE = 'could not extend file: No space left on device'; END $$`);
          for (const table of ["tasks", "meta"]) {
            await admin.query(`CREATE TRIGGER no_space BEFORE INSERT OR UPDATE ON "${schema}".${table}
              FOR EACH ROW EXECUTE FUNCTION "${schema}".no_space()`);
          }
          await assert.rejects(store.submitTask(newTask(tenant.id, 1)), isStorageFull);
          assert.equal(await store.health(), "full");
          assert.equal(await store.health(), "full");
          for (const table of ["tasks", "meta"])
            await admin.query(`DROP TRIGGER no_space ON "${schema}".${table}`);
        } finally {
          await admin.end();
        }
        assert.equal(await store.health(), "ok");
        await store.submitTask(newTask(tenant.id, 2));
        assert.equal((await store.listTasks(tenant.id, { limit: 50 })).tasks.length, 2);
      } finally {
        await store.close();
      }
    });
  });
}
