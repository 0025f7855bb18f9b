import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { createLonghaul, type Longhaul } from "../src/app.ts";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask, type TaskType } from "../src/core/task-type.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/store.ts";
import { blobTempsUnder, quietLog, tempDir, waitFor } from "./helpers.ts";
import { pgAvailableOrReport, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";

// step.artifact end to end over real HTTP, on SQLite and on PostgreSQL: a task streams 5 MB into
// an artifact, GET /v1/tasks/:id lists it, its bytes come back whole and by range, scoped by
// tenant; a re-run after a crash replays it without writing it again; bad names are refused.

const SIZE = 5 * 1024 * 1024;
const CAP = 6 * 1024 * 1024;
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** Deterministic bytes: chunk `i` of 64 KiB is filled with `i` and numbered. */
function chunkAt(i: number, size: number): Buffer {
  const n = Math.min(64 * 1024, size - i * 64 * 1024);
  const chunk = Buffer.alloc(n, i & 0xff);
  chunk.writeUInt32BE(i, 0);
  return chunk;
}
function expectedBytes(size: number): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i * 64 * 1024 < size; i++) parts.push(chunkAt(i, size));
  return Buffer.concat(parts);
}

/** Counts how often task code's streams were read (not merely made). */
const reads = new Map<string, number>();
const countRead = (key: string) => reads.set(key, (reads.get(key) ?? 0) + 1);

/** `size` bytes as a web ReadableStream, made chunk by chunk as they are read (none before). */
function webStream(key: string, size: number): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (i === 0) countRead(key);
        if (i * 64 * 1024 >= size) return controller.close();
        controller.enqueue(chunkAt(i++, size));
      },
    },
    { highWaterMark: 0 },
  );
}

/** Fails once, the first time each task reaches it: its advance retries and replays what came before. */
const failedOnce = new Set<string>();

const taskTypes: TaskType[] = [
  defineTask("art.big", async (_input, step, ctx) => {
    const info = await step.artifact("report 5mb.bin", webStream(`big:${ctx.taskId}`, SIZE), {
      contentType: "application/x-report",
    });
    await step.run("after", () => {
      if (!failedOnce.has(ctx.taskId)) {
        failedOnce.add(ctx.taskId);
        throw new Error("a transient failure after the artifact");
      }
      return true;
    });
    return info;
  }),
  defineTask("art.kinds", async (_input, step, ctx) => {
    const text = await step.artifact("notes.txt", "héllo");
    const bytes = await step.artifact("raw", new Uint8Array([1, 2, 3]));
    const node = await step.artifact("node.json", Readable.from([Buffer.from('{"a":'), Buffer.from("1}")]), {
      contentType: "application/json",
    });
    async function* gen() {
      countRead(`gen:${ctx.taskId}`);
      yield new TextEncoder().encode("gen");
    }
    const iter = await step.artifact("gen", gen());
    return { text, bytes, node, iter };
  }),
  defineTask("art.bad", async (input: { name: string }, step) => {
    await step.artifact(input.name, "x");
    return "stored";
  }),
  defineTask("art.sized", async (input: { size: number }, step, ctx) =>
    step.artifact("sized.bin", webStream(`sized:${ctx.taskId}`, input.size)),
  ),
  defineTask("art.twice", async (_input, step) => {
    await step.artifact("same", "a");
    await step.artifact("same", "b");
    return "stored";
  }),
];

/** While `armed`, the next `storeArtifact` commits, then the process "dies" (throws): the next run must replay it. */
interface Crash {
  armed: boolean;
  crashed: string | null;
}

function crashingAfterCommit(store: Store, crash: Crash): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "storeArtifact") {
        return async (...args: Parameters<Store["storeArtifact"]>) => {
          const r = await target.storeArtifact(...args);
          if (crash.armed) {
            crash.armed = false;
            crash.crashed = args[2].taskId;
            throw new Error("the process died after the artifact's transaction committed");
          }
          return r;
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

function artifactSuite(dialect: string, open: (dir: string) => Store): void {
  describe(`artifacts over HTTP (${dialect})`, () => {
    const tmp = tempDir("longhaul-artifacts-");
    let app: Longhaul;
    let url: string;
    let key: string;
    let otherKey: string;
    let quotaKey: string;
    let quotaTenant: string;
    let store: Store;
    let blobs: FsBlobStore;
    const crash: Crash = { armed: false, crashed: null };

    const api = async (path: string, init: { method?: string; body?: unknown; key?: string } = {}) => {
      const res = await fetch(url + path, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: {
          authorization: `Bearer ${init.key ?? key}`,
          ...(init.body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    };
    const submit = async (type: string, input: unknown = {}) => {
      const r = await api("/v1/tasks", { body: { type, input } });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      return r.body.task_id as string;
    };
    const ended = (id: string) =>
      waitFor(
        async () => {
          const t = await api(`/v1/tasks/${id}`);
          return ["succeeded", "failed", "timed_out"].includes(t.body.status) ? t.body : null;
        },
        30_000,
        `task ${id} to end`,
      );
    const artifactKeys = async (taskId: string) => {
      const keys: string[] = [];
      for await (const k of blobs.list("artifacts/")) if (k.includes(`/${taskId}/`)) keys.push(k);
      return keys;
    };

    before(async () => {
      store = open(tmp.dir);
      await store.migrate();
      key = newApiKey();
      otherKey = newApiKey();
      quotaKey = newApiKey();
      await store.createTenant({ name: "artifacts", keyHash: hashApiKey(key) });
      await store.createTenant({ name: "other", keyHash: hashApiKey(otherKey) });
      quotaTenant = (
        await store.createTenant({
          name: "quota",
          keyHash: hashApiKey(quotaKey),
          quotas: { storage_quota_bytes: 1000 },
        })
      ).id;
      blobs = new FsBlobStore({ root: join(tmp.dir, "blobs") });
      app = await createLonghaul({
        store: crashingAfterCommit(store, crash),
        logger: quietLog(),
        taskTypes,
        blobs,
        // Above the 5 MB artifact, below what the cap test streams.
        limits: { file_max_bytes: CAP },
        worker: { leaseMs: 5000, idleMs: 50 },
      });
      url = await app.listen({ port: 0 });
    });
    after(async () => {
      await app.close();
      tmp.cleanup();
    });

    test("a 5 MB streamed artifact is listed on the task and downloads byte-identical, whole and by range; a retry replays it", async () => {
      const id = await submit("art.big");
      const task = await ended(id);
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      const expected = expectedBytes(SIZE);
      const info = {
        name: "report 5mb.bin",
        size: SIZE,
        sha256: sha256(expected),
        content_type: "application/x-report",
      };
      assert.deepEqual(task.output, info);
      assert.deepEqual(task.artifacts, [
        {
          name: info.name,
          url: `${url}/v1/tasks/${id}/artifacts/report%205mb.bin`,
          content_type: info.content_type,
          size: SIZE,
          sha256: info.sha256,
        },
      ]);
      // The step after it failed once: the retry replayed the artifact without reading the stream.
      assert.equal(reads.get(`big:${id}`), 1);
      assert.equal((await artifactKeys(id)).length, 1);

      const res = await fetch(task.artifacts[0].url, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/x-report");
      assert.equal(res.headers.get("content-length"), String(SIZE));
      assert.equal(res.headers.get("etag"), `"${info.sha256}"`);
      assert.equal(res.headers.get("accept-ranges"), "bytes");
      const body = Buffer.from(await res.arrayBuffer());
      assert.equal(sha256(body), info.sha256);

      const part = await fetch(task.artifacts[0].url, {
        headers: { authorization: `Bearer ${key}`, range: "bytes=65530-65545" },
      });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get("content-range"), `bytes 65530-65545/${SIZE}`);
      assert.equal(part.headers.get("content-length"), "16");
      assert.deepEqual(Buffer.from(await part.arrayBuffer()), expected.subarray(65530, 65546));

      const outside = await fetch(task.artifacts[0].url, {
        headers: { authorization: `Bearer ${key}`, range: `bytes=${SIZE}-` },
      });
      assert.equal(outside.status, 416);
      assert.equal(outside.headers.get("content-range"), `bytes */${SIZE}`);
      assert.equal((await outside.json()).error.code, "RANGE_NOT_SATISFIABLE");
    });

    test("another tenant's key gets 404 for the task and its artifact; a missing name is ARTIFACT_NOT_FOUND", async () => {
      const id = await submit("art.kinds");
      assert.equal((await ended(id)).status, "succeeded");
      const path = `/v1/tasks/${id}/artifacts/notes.txt`;
      const theirs = await api(path, { key: otherKey });
      assert.equal(theirs.status, 404);
      assert.equal(theirs.body.error.code, "ARTIFACT_NOT_FOUND");
      const task = await api(`/v1/tasks/${id}`, { key: otherKey });
      assert.equal(task.status, 404);
      assert.equal(task.body.error.code, "TASK_NOT_FOUND");
      const missing = await api(`/v1/tasks/${id}/artifacts/nope`);
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, "ARTIFACT_NOT_FOUND");
    });

    test("text, bytes, a Readable and an async iterable are stored with their types; a task's read token reads them", async () => {
      const id = await submit("art.kinds");
      const task = await ended(id);
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      assert.deepEqual(
        task.artifacts.map((a: { name: string; content_type: string; size: number }) => [
          a.name,
          a.content_type,
          a.size,
        ]),
        [
          ["notes.txt", "text/plain; charset=utf-8", Buffer.byteLength("héllo")],
          ["raw", "application/octet-stream", 3],
          ["node.json", "application/json", 7],
          ["gen", "application/octet-stream", 3],
        ],
      );
      assert.equal(task.output.text.sha256, sha256(Buffer.from("héllo")));
      const text = await fetch(`${url}/v1/tasks/${id}/artifacts/notes.txt`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(await text.text(), "héllo");

      const { token } = (await api("/v1/tokens", { body: { scope: { task_id: id } } })).body;
      const viaToken = await fetch(`${url}/v1/tasks/${id}/artifacts/node.json?token=${token}`);
      assert.equal(viaToken.status, 200);
      assert.deepEqual(await viaToken.json(), { a: 1 });
      const otherTask = await submit("art.kinds");
      await ended(otherTask);
      const outOfScope = await fetch(`${url}/v1/tasks/${otherTask}/artifacts/raw?token=${token}`);
      assert.equal(outOfScope.status, 403);
    });

    test("a crash after the artifact's transaction committed: the re-run replays it and stores nothing twice", async () => {
      // The task's first storeArtifact commits, then its process "dies".
      crash.armed = true;
      const id = await submit("art.kinds");
      const task = await ended(id);
      assert.equal(crash.crashed, id);
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      assert.equal(task.artifacts.length, 4);
      // One blob per artifact: the crashed run's bytes are the stored ones, not written again.
      assert.equal((await artifactKeys(id)).length, 4);
      assert.equal(reads.get(`gen:${id}`) ?? 0, 1);
    });

    test("an artifact past limits.file_max_bytes fails its step at once with ARTIFACT_TOO_LARGE and keeps nothing", async () => {
      const id = await submit("art.sized", { size: CAP + 64 * 1024 });
      const task = await ended(id);
      assert.equal(task.status, "failed");
      assert.equal(task.error.code, "ARTIFACT_TOO_LARGE", JSON.stringify(task.error));
      assert.match(task.error.message, new RegExp(`${CAP} bytes`));
      const step = task.steps.find((st: { id: string }) => st.id === "artifact:sized.bin");
      assert.equal(step.attempts, 1, "not retried");
      assert.deepEqual(task.artifacts, []);
      assert.deepEqual(await artifactKeys(id), []);
      assert.deepEqual(blobTempsUnder(join(tmp.dir, "blobs")), []);
      const exact = await ended(await submit("art.sized", { size: CAP }));
      assert.equal(exact.status, "succeeded", "an artifact of exactly the cap is stored");
    });

    test("artifacts count against the tenant's storage quota with its files; one past it fails, removed", async () => {
      const upload = (body: string) =>
        fetch(`${url}/v1/files`, {
          method: "POST",
          headers: { authorization: `Bearer ${quotaKey}`, "content-type": "text/plain" },
          body,
        });
      const run = async (size: number) => {
        const r = await api("/v1/tasks", { key: quotaKey, body: { type: "art.sized", input: { size } } });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        return waitFor(
          async () => {
            const t = await api(`/v1/tasks/${r.body.task_id}`, { key: quotaKey });
            return ["succeeded", "failed"].includes(t.body.status) ? t.body : null;
          },
          30_000,
          "the task to end",
        );
      };
      assert.equal((await upload("f".repeat(600))).status, 201);
      const fits = await run(300);
      assert.equal(fits.status, "succeeded", JSON.stringify(fits.error));
      const over = await run(200);
      assert.equal(over.status, "failed");
      assert.equal(over.error.code, "STORAGE_QUOTA_EXCEEDED", JSON.stringify(over.error));
      assert.match(over.error.message, /take 900 bytes; 200 more/);
      assert.deepEqual(over.artifacts, []);
      assert.deepEqual(await artifactKeys(over.id), [], "the refused artifact's bytes are removed");
      const refused = await upload("g".repeat(200));
      assert.equal(refused.status, 413, "an upload counts the artifacts too");
      assert.equal((await refused.json()).error.code, "STORAGE_QUOTA_EXCEEDED");
      await store.updateTenant(quotaTenant, { quotas: { storage_quota_bytes: 0 } });
    });

    test("bad names are VALIDATION_FAILED, the same name twice is STEP_ID_DUPLICATE", async () => {
      for (const name of ["", "a/b", "tab\there", "x".repeat(201), "nul\u0000"]) {
        const task = await ended(await submit("art.bad", { name }));
        assert.equal(task.status, "failed", name);
        assert.equal(task.error.code, "VALIDATION_FAILED", name);
        assert.deepEqual(task.artifacts, []);
      }
      const long = await ended(await submit("art.bad", { name: "y".repeat(200) }));
      assert.equal(long.status, "succeeded");
      assert.equal(long.artifacts[0].name, "y".repeat(200));
      const twice = await ended(await submit("art.twice"));
      assert.equal(twice.status, "failed");
      assert.equal(twice.error.code, "STEP_ID_DUPLICATE");
      assert.match(twice.error.message, /step\.artifact\("same"\)/);
    });
  });
}

artifactSuite("sqlite", (dir) => new SqliteStore({ path: join(dir, "longhaul.db") }));

if (pgAvailableOrReport(await pgUnreachable(), "PostgreSQL artifact tests")) {
  const { fresh } = pgTestSchemas();
  artifactSuite("postgres", () => new PostgresStore({ url: pgUrl(fresh()) }));
}
