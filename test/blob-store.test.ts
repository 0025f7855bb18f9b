import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { utimesSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import type { BlobStore } from "../src/blobs/blob-store.ts";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { openS3BlobStore } from "../src/blobs/index.ts";
import { ManualClock } from "../src/core/clock.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { blobTempsUnder, tempDir } from "./helpers.ts";
import { startS3StandIn } from "./s3-stand-in.ts";

// One contract for every BlobStore (src/blobs/README.md): blobs appear whole or not at all,
// ranges read the bytes they name, temporary files are swept by age on the injected clock, and
// keys cannot leave the store.

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function bytes(n: number, seed = 7): Buffer {
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

/** A source that yields `good` bytes in small chunks, then fails as `how` says. */
function brokenSource(good: Buffer, how: "error" | "destroy"): Readable {
  let sent = 0;
  const stream = new Readable({
    read() {
      if (sent < good.length) {
        this.push(good.subarray(sent, sent + 1024));
        sent += 1024;
        return;
      }
      if (how === "error") this.destroy(new Error("the client went away"));
      else this.destroy();
    },
  });
  return stream;
}

const isCode = (code: string) => (err: unknown) => {
  assert.ok(err instanceof LonghaulError, `expected a LonghaulError, got ${String(err)}`);
  assert.equal(err.code, code);
  return true;
};

interface Subject {
  store: BlobStore;
  clock: ManualClock;
  /** Where a crashed write of `key` would have left its temporary file. */
  tempDirFor(key: string): string;
  /** Every temporary file the store has left anywhere. */
  temps(): string[];
  cleanup(): Promise<void>;
}

const subjects: Record<string, () => Promise<Subject>> = {
  fs: async () => {
    const tmp = tempDir("longhaul-blobs-");
    const clock = new ManualClock(Date.now());
    const root = join(tmp.dir, "blobs");
    return {
      store: new FsBlobStore({ root, clock }),
      clock,
      tempDirFor: (key) => join(root, ...key.split("/").slice(0, -1)),
      temps: () => blobTempsUnder(root),
      cleanup: async () => tmp.cleanup(),
    };
  },
  s3: async () => {
    const tmp = tempDir("longhaul-s3-spool-");
    const server = await startS3StandIn({ bucket: "longhaul-test", pageSize: 2 });
    const clock = new ManualClock(Date.now());
    const store = await openS3BlobStore({
      bucket: "longhaul-test",
      prefix: "deploy-1/",
      spoolDir: tmp.dir,
      clock,
      clientConfig: {
        endpoint: server.endpoint,
        region: "us-east-1",
        forcePathStyle: true,
        credentials: { accessKeyId: "test", secretAccessKey: "test" },
      },
    });
    return {
      store,
      clock,
      tempDirFor: () => tmp.dir,
      temps: () => blobTempsUnder(tmp.dir),
      cleanup: async () => {
        await server.close();
        tmp.cleanup();
      },
    };
  },
};

for (const [name, make] of Object.entries(subjects)) {
  describe(`BlobStore contract: ${name}`, () => {
    let s: Subject;
    before(async () => {
      s = await make();
    });
    after(async () => {
      await s.cleanup();
    });

    test("a put answers the size and SHA-256 of its bytes, and get returns them", async () => {
      const body = bytes(300_000);
      const written = Date.now();
      const info = await s.store.put(
        "tenants/t1/round-trip",
        Readable.from([body.subarray(0, 1000), body.subarray(1000)]),
      );
      assert.deepEqual(info, { key: "tenants/t1/round-trip", size: body.length, sha256: sha256(body) });
      const back = await readAll(await s.store.get("tenants/t1/round-trip"));
      assert.equal(sha256(back), sha256(body));
      const { modifiedAt, ...stat } = (await s.store.stat("tenants/t1/round-trip")) ?? {};
      assert.deepEqual(stat, { key: "tenants/t1/round-trip", size: body.length });
      // When it was written, as the orphan sweep ages blobs: S3 tells it to the second.
      assert.equal(typeof modifiedAt, "number");
      assert.ok(modifiedAt! >= Math.floor(written / 1000) * 1000 - 1000, `${modifiedAt} vs ${written}`);
      assert.ok(modifiedAt! <= Date.now() + 1000);
    });

    test("an empty body is a blob of zero bytes", async () => {
      const info = await s.store.put("empty", Readable.from([]));
      assert.equal(info.size, 0);
      assert.equal(info.sha256, sha256(Buffer.alloc(0)));
      assert.equal((await readAll(await s.store.get("empty"))).length, 0);
    });

    test("a range read returns exactly the bytes it names; one outside the blob is refused", async () => {
      const body = bytes(10_000, 3);
      await s.store.put("ranged", Readable.from([body]));
      assert.deepEqual(
        await readAll(await s.store.get("ranged", { start: 100, end: 199 })),
        body.subarray(100, 200),
      );
      assert.deepEqual(await readAll(await s.store.get("ranged", { start: 9_990 })), body.subarray(9_990));
      assert.deepEqual(await readAll(await s.store.get("ranged", { start: 0, end: 0 })), body.subarray(0, 1));
      // An end past the last byte reads to the last byte, as HTTP ranges do.
      assert.deepEqual(
        await readAll(await s.store.get("ranged", { start: 9_999, end: 50_000 })),
        body.subarray(9_999),
      );
      await assert.rejects(s.store.get("ranged", { start: 10_000 }), isCode("RANGE_NOT_SATISFIABLE"));
      await assert.rejects(s.store.get("ranged", { start: 20, end: 10 }), isCode("RANGE_NOT_SATISFIABLE"));
    });

    test("delete removes the blob; a missing key reads as not found and deletes quietly", async () => {
      await s.store.put("doomed", Readable.from([Buffer.from("bye")]));
      await s.store.delete("doomed");
      assert.equal(await s.store.stat("doomed"), null);
      await assert.rejects(s.store.get("doomed"), isCode("BLOB_NOT_FOUND"));
      await s.store.delete("doomed");
      await assert.rejects(s.store.get("never-was"), isCode("BLOB_NOT_FOUND"));
    });

    for (const how of ["error", "destroy"] as const) {
      test(`a source that ${how === "error" ? "errors" : "is destroyed"} midway leaves nothing under the key and no temporary file`, async () => {
        const key = `cut/${how}`;
        await assert.rejects(s.store.put(key, brokenSource(bytes(64 * 1024), how)));
        assert.equal(await s.store.stat(key), null);
        await assert.rejects(s.store.get(key), isCode("BLOB_NOT_FOUND"));
        const listed: string[] = [];
        for await (const k of s.store.list("cut/")) listed.push(k);
        assert.deepEqual(listed, []);
        assert.deepEqual(s.temps(), []);
      });
    }

    test("a write cut off midway over an existing blob leaves the old blob whole", async () => {
      const old = bytes(5_000, 1);
      await s.store.put("kept", Readable.from([old]));
      await assert.rejects(s.store.put("kept", brokenSource(bytes(8_192, 2), "error")));
      assert.equal(sha256(await readAll(await s.store.get("kept"))), sha256(old));
    });

    test("a body over maxBytes is refused with FILE_TOO_LARGE and nothing is kept", async () => {
      await assert.rejects(
        s.store.put("big", Readable.from([bytes(600), bytes(600)]), { maxBytes: 1000 }),
        (err: unknown) =>
          isCode("FILE_TOO_LARGE")(err) && (err as LonghaulError).details?.limit_bytes === 1000,
      );
      assert.equal(await s.store.stat("big"), null);
      assert.deepEqual(s.temps(), []);
      const exact = await s.store.put("exact", Readable.from([bytes(1000)]), { maxBytes: 1000 });
      assert.equal(exact.size, 1000);
    });

    test("list answers the keys under a prefix, in order, across pages", async () => {
      for (const key of ["l/a/1", "l/a/2", "l/a/b/3", "l/ab/4", "l/c"]) {
        await s.store.put(key, Readable.from([Buffer.from(key)]));
      }
      const list = async (prefix: string) => {
        const out: string[] = [];
        for await (const k of s.store.list(prefix)) out.push(k);
        return out;
      };
      assert.deepEqual(await list("l/a/"), ["l/a/1", "l/a/2", "l/a/b/3"]);
      assert.deepEqual(await list("l/a"), ["l/a/1", "l/a/2", "l/a/b/3", "l/ab/4"]);
      assert.deepEqual(await list("l/"), ["l/a/1", "l/a/2", "l/a/b/3", "l/ab/4", "l/c"]);
      assert.deepEqual(await list("l/zzz"), []);
      assert.ok((await list("")).includes("l/c"));
    });

    test("sweep removes temporary files older than the cutoff on the injected clock, not fresh ones", async () => {
      await s.store.put("sweep/blob", Readable.from([Buffer.from("stays")]));
      const dir = s.tempDirFor("sweep/blob");
      await mkdir(dir, { recursive: true });
      const stale = join(dir, ".tmp-crashed-write");
      writeFileSync(stale, "half a body");
      const seen = new Date(s.clock.now());
      utimesSync(stale, seen, seen);
      assert.equal(await s.store.sweep(60_000), 0, "a temporary file younger than the cutoff is kept");
      assert.deepEqual(s.temps(), [stale]);
      s.clock.advance(60_001);
      assert.equal(await s.store.sweep(60_000), 1);
      assert.deepEqual(s.temps(), []);
      assert.deepEqual(await readAll(await s.store.get("sweep/blob")), Buffer.from("stays"));
    });

    test("bad keys are refused with BLOB_KEY_INVALID by every operation", async () => {
      const bad = [
        "../escape",
        "/absolute",
        "a/../b",
        "a/./b",
        "a//b",
        "",
        ".hidden",
        "a/.tmp-x",
        "a\\b",
        "é",
        "a b",
        "x".repeat(513),
      ];
      for (const key of bad) {
        await assert.rejects(
          s.store.put(key, Readable.from([Buffer.from("x")])),
          isCode("BLOB_KEY_INVALID"),
          key,
        );
        await assert.rejects(s.store.get(key), isCode("BLOB_KEY_INVALID"), key);
        await assert.rejects(s.store.stat(key), isCode("BLOB_KEY_INVALID"), key);
        await assert.rejects(s.store.delete(key), isCode("BLOB_KEY_INVALID"), key);
      }
      await assert.rejects(async () => {
        for await (const _ of s.store.list("../")) {
        }
      }, isCode("BLOB_KEY_INVALID"));
    });
  });
}

test("an fs put of 50 MB streams it: RSS grows well under the body's size", async () => {
  const tmp = tempDir("longhaul-blobs-big-");
  try {
    const store = new FsBlobStore({ root: tmp.dir });
    const chunk = Buffer.alloc(64 * 1024);
    const chunks = (50 * 1024 * 1024) / chunk.length;
    const expected = createHash("sha256");
    // One buffer, rewritten for each chunk: the store must have written a chunk before it
    // asks for the next, or the hash below would not match.
    async function* body() {
      for (let i = 0; i < chunks; i++) {
        chunk.fill(i & 0xff);
        chunk.writeUInt32BE(i, 0);
        expected.update(chunk);
        yield chunk;
      }
    }
    const before = process.memoryUsage().rss;
    const info = await store.put("big/fifty", body());
    const growth = process.memoryUsage().rss - before;
    assert.equal(info.size, 50 * 1024 * 1024);
    assert.equal(info.sha256, expected.digest("hex"));
    assert.ok(growth < 32 * 1024 * 1024, `RSS grew by ${Math.round(growth / 1024 / 1024)} MB`);
  } finally {
    tmp.cleanup();
  }
});
