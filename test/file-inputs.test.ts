import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { blobKeys, blobTempsUnder, tempDir, waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

// Files as tasks use them, over real HTTP on a real SQLite file: the tenant's storage quota at
// upload (the store's side on both dialects is in test/store-contract.ts), and file references
// in submitted inputs.

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

  const submit = (input: Record<string, unknown>, type = "demo.echo") =>
    s.api("/v1/tasks", { body: { type, input: type === "demo.echo" ? { text: "x", ...input } : input } });
  const taskCount = async () => (await s.store.listTasks(s.tenantId, { limit: 100 })).tasks.length;

  test("an unknown or another tenant's {file_id} in any input is FILE_NOT_FOUND naming its path; nothing is stored", async () => {
    const before = await taskCount();
    const unknown = await submit({ docs: [{ title: "a" }, { file_id: "file_01NOSUCHFILE" }] });
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
    assert.equal(unknown.body.error.code, "FILE_NOT_FOUND");
    assert.equal(unknown.body.error.param, "input.docs[1].file_id");
    const key = newApiKey();
    await s.store.createTenant({ name: "theirs", keyHash: hashApiKey(key) });
    const theirs = await (await upload("their bytes", key)).json();
    const other = await submit({ doc: { file_id: theirs.file_id } });
    assert.equal(other.body.error?.code, "FILE_NOT_FOUND", JSON.stringify(other.body));
    assert.equal(other.body.error.param, "input.doc.file_id");
    assert.equal(await taskCount(), before, "no task was stored");
    const mine = await (await upload("my own bytes")).json();
    assert.equal((await submit({ doc: { file_id: mine.file_id } })).status, 202);
  });

  test("a {url} must be https, s3:// or gs:// to a public host: URL_NOT_ALLOWED otherwise", async () => {
    const before = await taskCount();
    for (const url of [
      "https://10.0.0.8/doc.txt",
      "https://127.0.0.1/doc.txt",
      "https://[::1]/doc.txt",
      "https://169.254.169.254/latest/meta-data",
      "https://localhost/doc.txt",
      "http://example.com/doc.txt",
      "ftp://example.com/doc.txt",
      "file:///etc/passwd",
      "s3://bucket-only",
    ]) {
      const r = await submit({ source: { url } });
      assert.equal(r.status, 400, `${url}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, "URL_NOT_ALLOWED", url);
      assert.equal(r.body.error.param, "input.source.url");
    }
    assert.equal(await taskCount(), before);
    for (const url of ["https://example.com/doc.txt", "s3://bucket/key.txt", "gs://bucket/dir/object.txt"]) {
      assert.equal((await submit({ source: { url } })).status, 202, url);
    }
  });

  test("rag_summary refuses a document that is a URL or a path, pointing at url", async () => {
    for (const document of ["https://example.com/a.pdf", "s3://b/k", "/var/data/a.txt", "file:///a"]) {
      const r = await submit({ document }, "rag_summary");
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error.code, "VALIDATION_FAILED");
      assert.match(r.body.error.message, /"url"/);
    }
  });

  test("rag_summary by {file_id} streams the uploaded document in a step, then summarizes and chunks it", async () => {
    await s.store.updateTenant(s.tenantId, { quotas: { storage_quota_bytes: 0 } });
    const document = `${"Longhaul reads files in steps. ".repeat(80)}\n\nIt streams them from the blob store.`;
    const file = await (await upload(document)).json();
    const submitted = await submit({ file_id: file.file_id }, "rag_summary");
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const task = await waitFor(
      async () => {
        const r = await s.api(`/v1/tasks/${submitted.body.task_id}`);
        return ["succeeded", "failed", "canceled", "timed_out"].includes(r.body.status) ? r.body : null;
      },
      60_000,
      "rag_summary to end",
    );
    assert.equal(task.status, "succeeded", JSON.stringify(task.error));
    assert.match(task.output.summary, /^Summary: /);
    assert.ok(task.output.chunks >= 2);
    assert.deepEqual(
      task.steps.map((st: { id: string }) => st.id),
      ["read-document", "summarize", "chunk", "store-chunks", "artifact:report.pdf"],
    );
  });
});
