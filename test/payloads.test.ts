import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import pg from "pg";
import { createLonghaul, type Longhaul } from "../src/app.ts";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { LonghaulClient } from "../src/client/longhaul-client.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import type { Clock } from "../src/core/clock.ts";
import { inlineStored, inlineValue, payloadRef, sameStored, storedRef } from "../src/core/payload.ts";
import { defineTask, type TaskType } from "../src/core/task-type.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/store.ts";
import { bigThenHangTask, bigValue } from "./fixtures/payload-task.ts";
import { quietLog, tempDir, waitFor } from "./helpers.ts";
import { pgAvailableOrReport, pgBaseUrl, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";

// Large values kept in the blob store (ARCHITECTURE §4.10), end to end over real HTTP on a SQLite
// file and on PostgreSQL: a step returning 5 MB of JSON, a 3 MB input, a look-alike of a
// reference, the row's size read from the database itself, the signed link and its expiry on
// the injected clock, another tenant's 404, the SDK's `get`, the events, and a replay.

const MB = 1024 * 1024;
const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");

/** How often each task's "big" step ran. */
const bigRuns = new Map<string, number>();
/** Tasks whose step after "big" has failed once, so their advance retried and replayed "big". */
const failedOnce = new Set<string>();

const lookAlike = { $longhaul_payload: { sha256: "0".repeat(64), size: 12 } };
const escapedLookAlike = { $longhaul_escaped: { a: 1 } };

const taskTypes: TaskType[] = [
  defineTask("pl.big", async (_input, step, ctx) => {
    const big = await step.run("big", () => {
      bigRuns.set(ctx.taskId, (bigRuns.get(ctx.taskId) ?? 0) + 1);
      return bigValue(5 * MB, "big");
    });
    // Fails once: the retry reads "big" back from the blob store instead of running it again.
    const seen = await step.run("after", () => {
      if (!failedOnce.has(ctx.taskId)) {
        failedOnce.add(ctx.taskId);
        throw new Error("a transient failure after the big step");
      }
      return { rows: big.rows.length, sha256: sha256(JSON.stringify(big)) };
    });
    return { ...big, seen };
  }),
  defineTask("pl.echo", async (input: { text: string }, step) => {
    const seen = await step.run("seen", () => ({ length: input.text.length, sha256: sha256(input.text) }));
    return seen;
  }),
  defineTask("pl.medium", async () => bigValue(400 * 1024, "medium")),
  defineTask("pl.lookalike", async (input, step) => {
    const a = await step.run("a", () => lookAlike);
    const b = await step.run("b", () => escapedLookAlike);
    return { input, a, b };
  }),
  defineTask("pl.lookalike-output", async () => lookAlike),
  defineTask("pl.wait", async (input: { name: string }, step) => {
    const big = await step.run("big", () => bigValue(1 * MB, input.name));
    const data = await step.waitForEvent("go", { match: { event: input.name } });
    return { rows: big.rows.length, data };
  }),
];

interface Dialect {
  store: Store;
  /** The bytes the database holds in a task's output column and its steps' output columns. */
  columnBytes(taskId: string): Promise<{ input: number; output: number; steps: number; events: number }>;
  close(): Promise<void>;
}

function payloadSuite(name: string, open: (dir: string, clock: Clock) => Dialect): void {
  describe(`large payloads over HTTP (${name})`, () => {
    const tmp = tempDir("longhaul-payloads-");
    let offsetMs = 0;
    const clock: Clock = { now: () => Date.now() + offsetMs };
    let dialect: Dialect;
    let app: Longhaul;
    let url: string;
    let key: string;
    let otherKey: string;
    let blobs: FsBlobStore;

    const api = async (path: string, init: { method?: string; body?: unknown; key?: string | null } = {}) => {
      const res = await fetch(path.startsWith("http") ? path : url + path, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: {
          ...(init.key === null ? {} : { authorization: `Bearer ${init.key ?? key}` }),
          ...(init.body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      });
      const text = await res.text();
      return { status: res.status, text, body: text ? JSON.parse(text) : null, headers: res.headers };
    };
    const submit = async (type: string, input: unknown = {}, clientRequestId?: string) => {
      const r = await api("/v1/tasks", {
        body: { type, input, ...(clientRequestId ? { client_request_id: clientRequestId } : {}) },
      });
      assert.ok(r.status === 202 || r.status === 200, r.text.slice(0, 300));
      return r.body.task_id as string;
    };
    const ended = (id: string) =>
      waitFor(
        async () => {
          const t = await api(`/v1/tasks/${id}`);
          return ["succeeded", "failed", "timed_out"].includes(t.body.status) ? t.body : null;
        },
        60_000,
        `task ${id} to end`,
      );
    /** A task's SSE stream, read until `marker` has come. */
    const eventsUntil = async (path: string, marker: string): Promise<string> => {
      const ac = new AbortController();
      const res = await fetch(url + path, { headers: { authorization: `Bearer ${key}` }, signal: ac.signal });
      assert.equal(res.status, 200);
      const decoder = new TextDecoder();
      let text = "";
      try {
        for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
          text += decoder.decode(chunk, { stream: true });
          if (text.includes(marker) && text.slice(text.indexOf(marker)).includes("\n\n")) break;
        }
      } finally {
        ac.abort();
      }
      return text;
    };
    const payloadKeys = async () => {
      const keys: string[] = [];
      for await (const k of blobs.list("payloads/")) keys.push(k);
      return keys;
    };

    before(async () => {
      dialect = open(tmp.dir, clock);
      const store = dialect.store;
      await store.migrate();
      key = newApiKey();
      otherKey = newApiKey();
      await store.createTenant({ name: "payloads", keyHash: hashApiKey(key) });
      await store.createTenant({ name: "other", keyHash: hashApiKey(otherKey) });
      blobs = new FsBlobStore({ root: join(tmp.dir, "blobs") });
      app = await createLonghaul({
        store,
        clock,
        logger: quietLog(),
        taskTypes,
        blobs,
        random: () => 0,
        limits: { submit_max_bytes: 4 * MB },
        worker: { leaseMs: 5000, idleMs: 50 },
      });
      url = await app.listen({ port: 0 });
    });
    after(async () => {
      await app.close();
      await dialect.close();
      tmp.cleanup();
    });

    test("a step returning 5 MB of JSON: the task succeeds, its rows stay small, the view links the value, the link serves its exact bytes", async () => {
      const id = await submit("pl.big");
      const task = await ended(id);
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      const big = bigValue(5 * MB, "big");
      const bigText = JSON.stringify(big);
      assert.ok(bigText.length > 5 * MB);
      // The retry after "after" failed read "big" back from the blob store: it ran once, and the
      // task code saw the value itself (its hash is the value's).
      assert.equal(bigRuns.get(id), 1);
      const seen = { rows: big.rows.length, sha256: sha256(bigText) };

      const bytes = await dialect.columnBytes(id);
      assert.ok(bytes.output < 200, `the output column holds ${bytes.output} bytes`);
      assert.ok(bytes.steps < 1000, `the steps' output columns hold ${bytes.steps} bytes`);
      assert.ok(bytes.events < 10_000, `the task's events hold ${bytes.events} bytes`);

      // Over the 1 MiB a view answers inline: the output and the step's result are links.
      assert.equal(task.output, null);
      assert.match(task.output_url, new RegExp(`^${url}/v1/tasks/${id}/output\\?token=v1\\.`));
      const bigStep = task.steps.find((s: { id: string }) => s.id === "big");
      assert.equal(bigStep.output, null);
      assert.match(bigStep.output_url, new RegExp(`^${url}/v1/tasks/${id}/steps/big/output\\?token=`));
      assert.deepEqual(task.steps.find((s: { id: string }) => s.id === "after").output, seen);

      // The link needs no key; it serves the value's exact JSON with its SHA-256 as ETag.
      const outputText = JSON.stringify({ ...big, seen });
      const res = await api(task.output_url, { key: null });
      assert.equal(res.status, 200);
      assert.equal(res.text, outputText);
      assert.equal(res.headers.get("etag"), `"${sha256(outputText)}"`);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      const stepRes = await api(bigStep.output_url, { key: null });
      assert.equal(stepRes.text, bigText);
      // The API key opens the same paths; a range is honoured.
      const part = await fetch(`${url}/v1/tasks/${id}/steps/big/output`, {
        headers: { authorization: `Bearer ${key}`, range: "bytes=0-9" },
      });
      assert.equal(part.status, 206);
      assert.equal(await part.text(), bigText.slice(0, 10));

      // Each value is one blob, named by its SHA-256, under the tenant.
      const keys = await payloadKeys();
      assert.ok(keys.some((k) => k.endsWith(`/${sha256(bigText)}`)));
      assert.ok(keys.some((k) => k.endsWith(`/${sha256(outputText)}`)));

      // The SDK hands back the value.
      const client = new LonghaulClient({ baseUrl: url, apiKey: key });
      const viaSdk = await client.get(id);
      assert.deepEqual(viaSdk.output, { ...big, seen });
      assert.deepEqual(viaSdk.steps.find((s) => s.id === "big")?.output, big);
      const unfollowed = await client.get(id, { follow: false });
      assert.equal(unfollowed.output, null);

      // The list never reads the blob store: it links the output.
      const list = await api("/v1/tasks?type=pl.big");
      const row = list.body.data.find((t: { task_id: string }) => t.task_id === id);
      assert.equal(row.output, null);
      assert.match(row.output_url, /\/output\?token=v1\./);

      // The task's events name the output by its size and SHA-256, never carry it.
      const events = await eventsUntil(`/v1/events?task_id=${id}`, "event: task.succeeded");
      assert.ok(events.length < 20_000, `the event stream carried ${events.length} bytes`);
      const succeeded = JSON.parse(/event: task\.succeeded\ndata: (.*)\n/.exec(events)![1]!);
      assert.deepEqual(succeeded.data, {
        status: "succeeded",
        output: null,
        output_ref: { sha256: sha256(outputText), size: outputText.length },
      });
    });

    test("another tenant gets 404 for the task's values, with or without a link of theirs", async () => {
      const id = await submit("pl.medium");
      await ended(id);
      for (const path of [
        `/v1/tasks/${id}/output`,
        `/v1/tasks/${id}/input`,
        `/v1/tasks/${id}/steps/x/output`,
      ]) {
        const r = await api(path, { key: otherKey });
        assert.equal(r.status, 404, path);
        assert.equal(r.body.error.code, "TASK_NOT_FOUND");
      }
      const mine = await api(`/v1/tasks/${id}/steps/missing/output`);
      assert.equal(mine.status, 404);
      assert.equal(mine.body.error.code, "PAYLOAD_NOT_FOUND");
      // A read token of another task does not open this one's values (as for the task's view).
      const other = await submit("pl.echo", { text: "x" });
      const token = await api("/v1/tokens", { body: { scope: { task_id: other } } });
      assert.equal(token.status, 201, token.text);
      const viaToken = await api(`/v1/tasks/${id}/output?token=${token.body.token}`, { key: null });
      assert.equal(viaToken.status, 403);
      assert.equal(viaToken.body.error.code, "TOKEN_SCOPE");
      // The other tenant's key wins over the link's token: still 404.
      const view = await api(`/v1/tasks/${id}`);
      const theirs = await api(view.body.output_url ?? `/v1/tasks/${id}/output`, { key: otherKey });
      assert.equal(theirs.status, 404);
    });

    test("a value over inline_max_bytes and within the response's bound is read back inline", async () => {
      const id = await submit("pl.medium");
      const task = await ended(id);
      assert.equal(task.status, "succeeded");
      assert.deepEqual(task.output, bigValue(400 * 1024, "medium"));
      assert.equal(task.output_url, undefined);
      const bytes = await dialect.columnBytes(id);
      assert.ok(bytes.output < 200, `the output column holds ${bytes.output} bytes`);
    });

    test("a 3 MB input goes past the API's 1 MiB, is read back by the task, and a duplicate submit is the same task", async () => {
      const text = "y".repeat(3 * MB);
      const id = await submit("pl.echo", { text }, "three-mb");
      const task = await ended(id);
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      assert.deepEqual(task.output, { length: text.length, sha256: sha256(text) });
      const bytes = await dialect.columnBytes(id);
      assert.ok(bytes.input < 200, `the input column holds ${bytes.input} bytes`);
      assert.equal(task.input, null);
      assert.equal((await api(task.input_url, { key: null })).text, JSON.stringify({ text }));
      // The same input under the same client_request_id is the same task; another is a conflict.
      const again = await api("/v1/tasks", {
        body: { type: "pl.echo", input: { text }, client_request_id: "three-mb" },
      });
      assert.equal(again.status, 200);
      assert.equal(again.body.task_id, id);
      const changed = await api("/v1/tasks", {
        body: { type: "pl.echo", input: { text: `${text}z` }, client_request_id: "three-mb" },
      });
      assert.equal(changed.status, 409);
      assert.equal(changed.body.error.code, "IDEMPOTENCY_CONFLICT");
    });

    test("a submit over limits.submit_max_bytes is refused with 413, and other routes keep the 1 MiB", async () => {
      const tooBig = await api("/v1/tasks", {
        body: { type: "pl.echo", input: { text: "z".repeat(5 * MB) } },
      });
      assert.equal(tooBig.status, 413);
      const signal = await api("/v1/signals", { body: { name: "s", data: "z".repeat(2 * MB) } });
      assert.equal(signal.status, 413);
    });

    test("values that look like references or escapes round-trip untouched, as input, step results and output", async () => {
      const input = { nested: lookAlike, top: 1 };
      const id = await submit("pl.lookalike", lookAlike);
      const task = await ended(id);
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      assert.deepEqual(task.input, lookAlike);
      assert.deepEqual(task.output, { input: lookAlike, a: lookAlike, b: escapedLookAlike });
      assert.deepEqual(
        task.steps.map((s: { output: unknown }) => s.output),
        [lookAlike, escapedLookAlike],
      );
      assert.equal((await api(`/v1/tasks/${id}/steps/a/output`)).text, JSON.stringify(lookAlike));
      const plain = await ended(await submit("pl.lookalike", input));
      assert.deepEqual(plain.input, input);
      const out = await ended(await submit("pl.lookalike-output"));
      assert.deepEqual(out.output, lookAlike);
      assert.equal((await api(`/v1/tasks/${out.task_id}/output`)).text, JSON.stringify(lookAlike));
    });

    test("a resumed task whose result's bytes are gone from the blob store fails with PAYLOAD_UNREADABLE", async () => {
      const name = `gone-${Math.random().toString(36).slice(2)}`;
      const id = await submit("pl.wait", { name });
      await waitFor(async () => (await api(`/v1/tasks/${id}`)).body.status === "waiting", 30_000, "the wait");
      const text = JSON.stringify(bigValue(1 * MB, name));
      const key = (await payloadKeys()).find((k) => k.endsWith(`/${sha256(text)}`));
      assert.ok(key, "the result is in the blob store");
      await blobs.delete(key);
      assert.equal((await api("/v1/signals", { body: { name, data: 1 } })).status, 202);
      const task = await ended(id);
      assert.equal(task.status, "failed");
      assert.equal(task.error.code, "PAYLOAD_UNREADABLE");
      // The view answers the same: the bytes it would read are not there.
      assert.equal((await api(`/v1/tasks/${id}/steps/big/output`)).status, 500);
    });

    test("a link minted for a read token's holder expires with that token, so links never renew it", async () => {
      const id = await submit("pl.big");
      await ended(id);
      const minted = await api("/v1/tokens", { body: { scope: { task_id: id }, ttl: 60 } });
      assert.equal(minted.status, 201, minted.text);
      const view = await api(`/v1/tasks/${id}?token=${minted.body.token}`, { key: null });
      assert.equal(view.status, 200);
      const link = view.body.output_url as string;
      assert.equal((await api(link, { key: null, method: "HEAD" })).status, 200);
      offsetMs += 61_000;
      const late = await api(link, { key: null });
      assert.equal(late.status, 410);
      assert.equal(late.body.error.code, "TOKEN_EXPIRED");
    });

    test("an embedded submit of a 3 MB input keeps it in the blob store too, and lh.get links it", async () => {
      const tenantId = (await dialect.store.tenantByKeyHash(hashApiKey(key)))!.id;
      const text = "e".repeat(3 * MB);
      const r = await app.submit(tenantId, { type: "pl.echo", input: { text } });
      const task = await ended(r.task_id);
      assert.deepEqual(task.output, { length: text.length, sha256: sha256(text) });
      assert.ok((await dialect.columnBytes(r.task_id)).input < 200);
      const got = await app.get(tenantId, r.task_id);
      assert.equal(got.input, null);
      assert.match(got.input_url ?? "", /\/input\?token=v1\./);
    });

    test("a link expires on the injected clock: refused once its read token's lifetime has passed", async () => {
      const id = await submit("pl.big");
      const task = await ended(id);
      assert.equal((await api(task.output_url, { key: null, method: "HEAD" })).status, 200);
      offsetMs += 901_000;
      const late = await api(task.output_url, { key: null });
      assert.equal(late.status, 410);
      assert.equal(late.body.error.code, "TOKEN_EXPIRED");
      // A fresh view mints a fresh link.
      const fresh = await api(`/v1/tasks/${id}`);
      assert.equal((await api(fresh.body.output_url, { key: null, method: "HEAD" })).status, 200);
    });
  });
}

payloadSuite("sqlite", (dir, clock) => {
  const path = join(dir, "longhaul.db");
  return {
    store: new SqliteStore({ path, clock }),
    async columnBytes(taskId) {
      const db = new Database(path, { readonly: true });
      try {
        const t = db
          .prepare(
            "SELECT length(CAST(input AS BLOB)) AS input, length(CAST(output AS BLOB)) AS output FROM tasks WHERE id = ?",
          )
          .get(taskId) as { input: number; output: number };
        const s = db
          .prepare("SELECT COALESCE(SUM(length(CAST(output AS BLOB))), 0) AS n FROM steps WHERE task_id = ?")
          .get(taskId) as { n: number };
        const e = db
          .prepare(
            "SELECT COALESCE(SUM(length(CAST(data AS BLOB))), 0) AS n FROM task_events WHERE task_id = ?",
          )
          .get(taskId) as { n: number };
        return { input: t.input, output: t.output ?? 0, steps: s.n, events: e.n };
      } finally {
        db.close();
      }
    },
    async close() {},
  };
});

if (pgAvailableOrReport(await pgUnreachable(), "PostgreSQL large payload tests")) {
  const { fresh } = pgTestSchemas();
  payloadSuite("postgres", (_dir, clock) => {
    const schema = fresh();
    const client = new pg.Client({ connectionString: pgBaseUrl });
    const connected = client.connect();
    return {
      store: new PostgresStore({ url: pgUrl(schema), clock }),
      async columnBytes(taskId) {
        await connected;
        const q = async (sql: string) => Number((await client.query(sql, [taskId])).rows[0].n ?? 0);
        return {
          input: await q(`SELECT octet_length(input) AS n FROM "${schema}".tasks WHERE id = $1`),
          output: await q(`SELECT octet_length(output) AS n FROM "${schema}".tasks WHERE id = $1`),
          steps: await q(
            `SELECT COALESCE(SUM(octet_length(output)), 0) AS n FROM "${schema}".steps WHERE task_id = $1`,
          ),
          events: await q(
            `SELECT COALESCE(SUM(octet_length(data::text)), 0) AS n FROM "${schema}".task_events WHERE task_id = $1`,
          ),
        };
      },
      async close() {
        await connected;
        await client.end();
      },
    };
  });
}

test("a worker killed after a 5 MB step: another takes the task over and its replay reads the same value from the blob store", async () => {
  const tmp = tempDir("longhaul-payloads-crash-");
  const db = join(tmp.dir, "longhaul.db");
  const blobDir = join(tmp.dir, "blobs");
  const log = join(tmp.dir, "steps.log");
  const store = new SqliteStore({ path: db });
  await store.migrate();
  const tenant = await store.createTenant({ name: "t", keyHash: "k" });
  const { task } = await store.submitTask({
    tenantId: tenant.id,
    type: "payload.takeover",
    input: {},
    clientRequestId: null,
    userId: null,
    traceId: null,
  });
  const child = spawn(process.execPath, ["--import", "tsx", "test/fixtures/payload-worker-process.ts"], {
    env: {
      ...process.env,
      LONGHAUL_TEST_DB: db,
      LONGHAUL_TEST_BLOBS: blobDir,
      LONGHAUL_TEST_STEPS_FILE: log,
      LONGHAUL_TEST_LEASE_MS: "600",
    },
    stdio: "inherit",
  });
  const steps = () => {
    try {
      return readFileSync(log, "utf8").trim().split("\n");
    } catch {
      return [];
    }
  };
  await waitFor(() => steps().includes("hang"), 30_000, "the first worker to reach step hang");
  child.kill("SIGKILL");
  await new Promise((r) => child.once("exit", r));

  const app = await createLonghaul({
    store,
    blobs: new FsBlobStore({ root: blobDir }),
    logger: quietLog(),
    role: "worker",
    taskTypes: [bigThenHangTask(log, false)],
    worker: { leaseMs: 600, idleMs: 50, releaseOrphansOnStart: false },
  });
  app.start();
  try {
    const done = await waitFor(
      async () => {
        const d = await store.getTask(tenant.id, task.id);
        return d?.task.status === "succeeded" ? d : null;
      },
      30_000,
      "the task to succeed on the second worker",
    );
    const big = JSON.stringify(bigValue(5 * MB, "takeover"));
    assert.deepEqual(done.task.output, {
      rows: bigValue(5 * MB, "takeover").rows.length,
      sha256: sha256(big),
    });
    assert.deepEqual(
      steps(),
      ["big", "hang", "hang"],
      "step big ran once; only the interrupted step ran again",
    );
    // The row names the blob by its SHA-256; nothing but references is in it.
    assert.deepEqual(done.steps.find((s) => s.stepId === "big")?.output, {
      $longhaul_payload: { sha256: sha256(big), size: Buffer.byteLength(big) },
    });
  } finally {
    await app.close();
    tmp.cleanup();
  }
});

test("a stored value compares by SHA-256 whichever way it is kept, and only an exact reference reads as one", () => {
  const value = { text: "z".repeat(1000) };
  const text = JSON.stringify(value);
  const ref = JSON.stringify(storedRef({ sha256: sha256(text), size: Buffer.byteLength(text) }));
  assert.ok(sameStored(ref, text), "a reference and the same value inline are the same input");
  assert.ok(sameStored(text, JSON.stringify(inlineStored(value))));
  assert.ok(!sameStored(ref, JSON.stringify({ text: "y" })));
  // A look-alike wrapped inline is the look-alike's own value.
  const look = { $longhaul_payload: { sha256: sha256(text), size: 3 } };
  assert.deepEqual(inlineValue(inlineStored(look)), look);
  assert.ok(sameStored(JSON.stringify(inlineStored(look)), JSON.stringify(inlineStored(look))));
  assert.equal(payloadRef({ $longhaul_payload: { sha256: "nothex", size: 1 } }), null);
  assert.equal(payloadRef({ $longhaul_payload: { sha256: sha256(text), size: 1 }, other: 1 }), null);
});
