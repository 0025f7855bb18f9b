import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { blobTempsUnder, tempDir } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

// Files as tasks use them, over real HTTP on a real SQLite file: the tenant's storage quota at
// upload (the store's side on both dialects is in test/store-contract.ts), and file references
// in submitted inputs.

async function blobKeys(blobs: FsBlobStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const k of blobs.list("files/")) keys.push(k);
  return keys;
}

describe("files in tasks' inputs over HTTP", () => {
  let s: Stack;
  let blobs: FsBlobStore;
  const tmp = tempDir("longhaul-file-inputs-");
  const upload = (body: BodyInit, key = s.key) =>
    fetch(`${s.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "text/plain" },
      body,
    });

  before(async () => {
    blobs = new FsBlobStore({ root: join(tmp.dir, "blobs") });
    s = await startStack({ blobs, limits: { storage_quota_bytes: 1000 } });
  });
  after(async () => {
    await s.close();
    tmp.cleanup();
  });

  test("an upload past the tenant's storage quota is 413 STORAGE_QUOTA_EXCEEDED naming it; no row, no bytes", async () => {
    const first = await upload("a".repeat(600));
    assert.equal(first.status, 201);
    const before = await blobKeys(blobs);
    const refused = await upload("b".repeat(401));
    const body = await refused.json();
    assert.equal(refused.status, 413, JSON.stringify(body));
    assert.equal(body.error.code, "STORAGE_QUOTA_EXCEEDED");
    assert.match(body.error.message, /1000 bytes/);
    assert.deepEqual(await blobKeys(blobs), before, "the refused upload's bytes are removed");
    assert.deepEqual(blobTempsUnder(join(tmp.dir, "blobs")), []);
    assert.equal((await s.store.listFiles(s.tenantId, { limit: 10 })).files.length, 1);
    assert.equal((await upload("a".repeat(600))).status, 200, "the same bytes again take no more room");
    await s.store.updateTenant(s.tenantId, { quotas: { storage_quota_bytes: 2000 } });
    assert.equal((await upload("b".repeat(401))).status, 201, "the tenant's own quota wins");
    await s.store.updateTenant(s.tenantId, { quotas: {} });
  });

  test("another tenant's uploads count against its own quota", async () => {
    const key = newApiKey();
    await s.store.createTenant({ name: "other", keyHash: hashApiKey(key) });
    assert.equal((await upload("c".repeat(900), key)).status, 201);
  });
});
