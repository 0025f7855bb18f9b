import assert from "node:assert/strict";
import { utimesSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import type { BlobStore } from "../src/blobs/blob-store.ts";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { S3BlobStore } from "../src/blobs/s3-blob-store.ts";
import { systemClock } from "../src/core/clock.ts";
import { ORPHAN_BLOB_GRACE_MS, sweepOrphanBlobs } from "../src/usecases/sweep-orphan-blobs.ts";
import { tempDir, waitFor } from "./helpers.ts";
import { startS3StandIn } from "./s3-stand-in.ts";
import { type Stack, startStack } from "./stack.ts";

// The maintenance sweep of blobs no row names (src/usecases/sweep-orphan-blobs.ts), on a real
// SQLite file, on disk and in an S3-compatible bucket: a file's and an artifact's blobs are
// kept, an orphan older than the grace period is removed, a fresh one (its row may be on its
// way) is kept. Ages are set on the blobs themselves, two days back, far from the day's grace.

const TWO_DAYS = 2 * 86_400_000;

async function blobKeys(blobs: BlobStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const k of blobs.list("")) keys.push(k);
  return keys;
}

interface Kind {
  name: string;
  make(dir: string): Promise<{ blobs: BlobStore; age(key: string): void; close(): Promise<void> }>;
}

const kinds: Kind[] = [
  {
    name: "on disk",
    async make(dir) {
      const root = join(dir, "blobs");
      return {
        blobs: new FsBlobStore({ root }),
        age: (key) => {
          const then = new Date(Date.now() - TWO_DAYS);
          utimesSync(join(root, ...key.split("/")), then, then);
        },
        close: async () => {},
      };
    },
  },
  {
    name: "in an S3 bucket",
    async make(dir) {
      const s3 = await startS3StandIn({ bucket: "blobs" });
      return {
        blobs: new S3BlobStore({
          bucket: "blobs",
          prefix: "lh/",
          spoolDir: join(dir, "spool"),
          clientConfig: {
            endpoint: s3.endpoint,
            region: "us-east-1",
            forcePathStyle: true,
            credentials: { accessKeyId: "test", secretAccessKey: "test" },
          },
        }),
        age: (key) => {
          const object = s3.objects.get(`lh/${key}`);
          assert.ok(object, key);
          object.modifiedAt = Date.now() - TWO_DAYS;
        },
        close: s3.close,
      };
    },
  },
];

for (const kind of kinds) {
  describe(`orphan blobs are swept ${kind.name}`, () => {
    const tmp = tempDir("longhaul-orphans-");
    let s: Stack;
    let made: Awaited<ReturnType<Kind["make"]>>;
    let named: string[];

    before(async () => {
      made = await kind.make(tmp.dir);
      s = await startStack({ blobs: made.blobs });
      // A file, and an artifact made from it: both blobs are named by rows, and aged.
      const uploaded = await fetch(`${s.url}/v1/files`, {
        method: "POST",
        headers: { authorization: `Bearer ${s.key}`, "content-type": "text/plain" },
        body: "named bytes",
      });
      assert.equal(uploaded.status, 201);
      const file = await uploaded.json();
      const submitted = await s.api("/v1/tasks", {
        body: { type: "demo.file", input: { file_id: file.file_id } },
      });
      await waitFor(
        async () => (await s.api(`/v1/tasks/${submitted.body.task_id}`)).body.status === "succeeded",
        30_000,
        "demo.file to succeed",
      );
      named = await blobKeys(made.blobs);
      assert.equal(named.length, 2, named.join(", "));
      for (const key of named) made.age(key);
    });
    after(async () => {
      await s.close();
      await made.close();
      tmp.cleanup();
    });

    const put = async (key: string, old: boolean) => {
      await made.blobs.put(key, Readable.from([Buffer.from("left by a crash")]));
      if (old) made.age(key);
      return key;
    };

    test("an old orphan under files/ or artifacts/ is removed; named blobs and a fresh orphan are kept", async () => {
      const oldFile = await put(`files/${s.tenantId}/0b7c1e0e-old-file`, true);
      const oldArtifact = await put(`artifacts/${s.tenantId}/task_gone/9f3a-old-artifact`, true);
      const fresh = await put(`files/${s.tenantId}/ffff-fresh`, false);
      const elsewhere = await put("other/kept-outside-the-swept-prefixes", true);
      const removed = await sweepOrphanBlobs({ store: s.store, blobs: made.blobs, clock: systemClock });
      assert.equal(removed, 2);
      const left = await blobKeys(made.blobs);
      for (const key of [...named, fresh, elsewhere]) assert.ok(left.includes(key), `${key} is kept`);
      for (const key of [oldFile, oldArtifact]) assert.ok(!left.includes(key), `${key} is removed`);
      // The fresh orphan goes once it is past the grace period.
      assert.equal(
        await sweepOrphanBlobs(
          {
            store: s.store,
            blobs: made.blobs,
            clock: { now: () => Date.now() + ORPHAN_BLOB_GRACE_MS + 60_000 },
          },
          {},
        ),
        1,
      );
      assert.ok(!(await blobKeys(made.blobs)).includes(fresh));
      await made.blobs.delete(elsewhere);
    });

    test("the maintenance pass sweeps them", async () => {
      const old = await put(`files/${s.tenantId}/aaaa-old-by-maintenance`, true);
      const now = Date.now();
      await s.store.enqueue([
        { kind: "maintenance", tenantId: null, payload: {}, runAt: now, dedupeKey: `orphans-${now}` },
      ]);
      await waitFor(async () => !(await blobKeys(made.blobs)).includes(old), 30_000, "the sweep");
      const left = await blobKeys(made.blobs);
      for (const key of named) assert.ok(left.includes(key), `${key} is kept`);
    });
  });
}
