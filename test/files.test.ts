import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { blobKeys, blobTempsUnder, tempDir, waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

// /v1/files over real HTTP on a real SQLite file (src/http/files-routes.ts): bytes streamed to
// the blob store before the row commits, read back whole or by range, scoped by tenant.

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** `size` bytes as a stream of 64 KiB chunks, made as they are read; `digest` is their SHA-256 once read. */
function streamedBody(size: number): { body: ReadableStream<Uint8Array>; digest: () => string } {
  const hash = createHash("sha256");
  let sent = 0;
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= size) return controller.close();
      const n = Math.min(64 * 1024, size - sent);
      const chunk = Buffer.alloc(n, i++ & 0xff);
      chunk.writeUInt32BE(i, 0);
      hash.update(chunk);
      sent += n;
      controller.enqueue(chunk);
    },
  });
  return { body, digest: () => hash.digest("hex") };
}

describe("files over HTTP", () => {
  let s: Stack;
  let blobs: FsBlobStore;
  const tmp = tempDir("longhaul-files-");
  const upload = (body: BodyInit, headers: Record<string, string> = {}, query = "") =>
    fetch(`${s.url}/v1/files${query}`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.key}`, ...headers },
      body,
      duplex: "half",
    } as RequestInit);
  const authed = (path: string, init: RequestInit = {}, key = s.key) =>
    fetch(s.url + path, { ...init, headers: { authorization: `Bearer ${key}`, ...init.headers } });

  before(async () => {
    blobs = new FsBlobStore({ root: join(tmp.dir, "blobs") });
    s = await startStack({ blobs, limits: { file_max_bytes: 30 * 1024 * 1024 } });
  });
  after(async () => {
    await s.close();
    tmp.cleanup();
  });

  test("a 20 MB streamed upload records its size and SHA-256, and its content comes back byte-identical", async () => {
    const size = 20 * 1024 * 1024;
    const { body, digest } = streamedBody(size);
    const res = await upload(body, { "content-type": "application/pdf" }, "?filename=report%20q3.pdf");
    const created = await res.json();
    assert.equal(res.status, 201, JSON.stringify(created));
    const expected = digest();
    assert.match(created.file_id, /^file_/);
    assert.deepEqual(
      { ...created, file_id: undefined, created_at: undefined },
      {
        file_id: undefined,
        filename: "report q3.pdf",
        content_type: "application/pdf",
        size,
        sha256: expected,
        created_at: undefined,
      },
    );
    const meta = await (await authed(`/v1/files/${created.file_id}`)).json();
    assert.deepEqual(meta, created);

    const content = await authed(`/v1/files/${created.file_id}/content`);
    assert.equal(content.status, 200);
    assert.equal(content.headers.get("content-type"), "application/pdf");
    assert.equal(content.headers.get("content-length"), String(size));
    const hash = createHash("sha256");
    let read = 0;
    for await (const chunk of content.body as unknown as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      read += chunk.byteLength;
    }
    assert.equal(read, size);
    assert.equal(hash.digest("hex"), expected);
  });

  test("a JSON upload over the API's 1 MiB JSON limit is stored as bytes, not parsed", async () => {
    const body = Buffer.from(`[${'"x",'.repeat(600_000)}"y"]`);
    const res = await upload(body, { "content-type": "application/json" });
    const created = await res.json();
    assert.equal(res.status, 201, JSON.stringify(created));
    assert.equal(created.size, body.length);
    assert.equal(created.sha256, sha256(body));
    assert.equal(created.filename, null);
  });

  test("a multipart upload stores the part named file, with its own type and filename", async () => {
    const bytes = Buffer.alloc(200_000, 9);
    bytes.write("multipart", 0);
    const form = new FormData();
    form.append("note", "a field before the file");
    form.append("file", new Blob([bytes], { type: "image/png" }), "shot.png");
    const res = await fetch(`${s.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.key}` },
      body: form,
    });
    const created = await res.json();
    assert.equal(res.status, 201, JSON.stringify(created));
    assert.equal(created.filename, "shot.png");
    assert.equal(created.content_type, "image/png");
    assert.equal(created.size, bytes.length);
    assert.equal(created.sha256, sha256(bytes));
    const back = Buffer.from(await (await authed(`/v1/files/${created.file_id}/content`)).arrayBuffer());
    assert.equal(sha256(back), sha256(bytes));
  });

  test("a multipart upload without a part named file is 400 VALIDATION_FAILED", async () => {
    const form = new FormData();
    form.append("attachment", new Blob([Buffer.from("x")]), "x.txt");
    const res = await fetch(`${s.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.key}` },
      body: form,
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.code, "VALIDATION_FAILED");
  });

  test("a Range request answers 206 with exactly those bytes; a suffix range the last bytes; one outside 416", async () => {
    const body = Buffer.alloc(10_000);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) & 0xff;
    const { file_id } = await (await upload(body, { "content-type": "application/octet-stream" })).json();
    const part = await authed(`/v1/files/${file_id}/content`, { headers: { range: "bytes=100-199" } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get("content-range"), "bytes 100-199/10000");
    assert.equal(part.headers.get("content-length"), "100");
    assert.deepEqual(Buffer.from(await part.arrayBuffer()), body.subarray(100, 200));
    const tail = await authed(`/v1/files/${file_id}/content`, { headers: { range: "bytes=-10" } });
    assert.equal(tail.status, 206);
    assert.deepEqual(Buffer.from(await tail.arrayBuffer()), body.subarray(9_990));
    const open = await authed(`/v1/files/${file_id}/content`, { headers: { range: "bytes=9000-" } });
    assert.deepEqual(Buffer.from(await open.arrayBuffer()), body.subarray(9_000));
    const outside = await authed(`/v1/files/${file_id}/content`, { headers: { range: "bytes=10000-" } });
    assert.equal(outside.status, 416);
    assert.equal(outside.headers.get("content-range"), "bytes */10000");
    assert.equal((await outside.json()).error.code, "RANGE_NOT_SATISFIABLE");
  });

  test("another tenant's file is 404 FILE_NOT_FOUND to read, download, delete and is not listed", async () => {
    const { file_id } = await (await upload(Buffer.from("mine"), { "content-type": "text/plain" })).json();
    const otherKey = newApiKey();
    await s.store.createTenant({ name: "other", keyHash: hashApiKey(otherKey) });
    for (const [path, method] of [
      [`/v1/files/${file_id}`, "GET"],
      [`/v1/files/${file_id}/content`, "GET"],
      [`/v1/files/${file_id}`, "DELETE"],
    ] as const) {
      const res = await authed(path, { method }, otherKey);
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal((await res.json()).error.code, "FILE_NOT_FOUND");
    }
    const list = await (await authed("/v1/files", {}, otherKey)).json();
    assert.deepEqual(list, { data: [], next_cursor: null });
    assert.equal((await authed(`/v1/files/${file_id}`)).status, 200, "still there for its tenant");
  });

  test("the same bytes again in the same tenant answer the existing file (200) and keep one blob", async () => {
    const bytes = Buffer.from("the same bytes, twice");
    const first = await upload(bytes, { "content-type": "text/plain" }, "?filename=a.txt");
    assert.equal(first.status, 201);
    const a = await first.json();
    const before = (await blobKeys(blobs)).length;
    const second = await upload(bytes, { "content-type": "text/csv" }, "?filename=b.csv");
    assert.equal(second.status, 200);
    assert.deepEqual(await second.json(), a);
    assert.equal((await blobKeys(blobs)).length, before, "the second copy's bytes were removed");
  });

  test("delete answers 204 and removes the row and the bytes; a second delete is 404", async () => {
    const { file_id } = await (
      await upload(Buffer.from("short-lived"), { "content-type": "text/plain" })
    ).json();
    const row = await s.store.getFile(s.tenantId, file_id);
    assert.ok(row);
    assert.notEqual(await blobs.stat(row.blobKey), null);
    const del = await authed(`/v1/files/${file_id}`, { method: "DELETE" });
    assert.equal(del.status, 204);
    assert.equal(await s.store.getFile(s.tenantId, file_id), null);
    assert.equal(await blobs.stat(row.blobKey), null);
    assert.equal((await authed(`/v1/files/${file_id}`)).status, 404);
    assert.equal((await authed(`/v1/files/${file_id}`, { method: "DELETE" })).status, 404);
  });

  test("/openapi.json documents the upload's body as bytes of any type or a multipart form", async () => {
    const doc = await (await fetch(`${s.url}/openapi.json`)).json();
    const body = doc.paths["/v1/files"].post.requestBody;
    assert.deepEqual(Object.keys(body.content).sort(), ["*/*", "multipart/form-data"]);
    assert.equal(body.content["*/*"].schema.format, "binary");
    assert.equal(doc.paths["/v1/files/{id}/content"].get.operationId, "getFileContent");
  });

  test("GET /v1/files pages newest first with limit and cursor", async () => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      made.unshift(
        (await (await upload(Buffer.from(`page item ${i}`), { "content-type": "text/plain" })).json())
          .file_id,
      );
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = `/v1/files?limit=2${cursor ? `&cursor=${cursor}` : ""}`;
      const page = await (await authed(q)).json();
      assert.ok(page.data.length <= 2);
      seen.push(...page.data.map((f: { file_id: string }) => f.file_id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor && pages < 50);
    assert.deepEqual(seen.slice(0, 5), made, "the newest five first, in order");
    assert.equal(new Set(seen).size, seen.length, "no file twice");
  });
});

describe("files: refused and cut-off uploads keep nothing", () => {
  let s: Stack;
  let blobs: FsBlobStore;
  let root: string;
  const tmp = tempDir("longhaul-files-limit-");
  before(async () => {
    root = join(tmp.dir, "blobs");
    blobs = new FsBlobStore({ root });
    s = await startStack({ blobs, limits: { file_max_bytes: 1000 } });
  });
  after(async () => {
    await s.close();
    tmp.cleanup();
  });
  const nothingKept = async () => {
    assert.deepEqual((await s.store.listFiles(s.tenantId, { limit: 10 })).files, []);
    assert.deepEqual(await blobKeys(blobs), []);
    assert.deepEqual(blobTempsUnder(root), []);
  };

  test("an upload over limits.file_max_bytes with a Content-Length is 413 FILE_TOO_LARGE naming the limit", async () => {
    const res = await fetch(`${s.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.key}`, "content-type": "text/plain" },
      body: Buffer.alloc(2000, 1),
    });
    assert.equal(res.status, 413);
    const err = (await res.json()).error;
    assert.equal(err.code, "FILE_TOO_LARGE");
    assert.match(err.message, /1000 bytes/);
    await nothingKept();
  });

  test("a streamed upload that passes the limit midway is 413 FILE_TOO_LARGE and keeps nothing", async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        `${s.url}/v1/files`,
        { method: "POST", headers: { authorization: `Bearer ${s.key}`, "content-type": "text/plain" } },
        (res) => {
          let text = "";
          res.on("data", (c) => {
            text += c;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on("error", reject);
      // Chunked: no Content-Length, so the limit is met while reading.
      req.write(Buffer.alloc(600, 1));
      req.write(Buffer.alloc(600, 2));
      req.end();
    });
    assert.equal(status, 413, body);
    assert.equal(JSON.parse(body).error.code, "FILE_TOO_LARGE");
    await nothingKept();
  });

  test("a multipart upload whose file passes the limit is 413 FILE_TOO_LARGE and keeps nothing", async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const boundary = "longhaul-test-boundary";
      const req = request(
        `${s.url}/v1/files`,
        {
          method: "POST",
          headers: {
            authorization: `Bearer ${s.key}`,
            "content-type": `multipart/form-data; boundary=${boundary}`,
          },
        },
        (res) => {
          let text = "";
          res.on("data", (c) => {
            text += c;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on("error", reject);
      req.write(
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`,
      );
      req.write(Buffer.alloc(1500, 4));
      req.end(`\r\n--${boundary}--\r\n`);
    });
    assert.equal(status, 413, body);
    assert.equal(JSON.parse(body).error.code, "FILE_TOO_LARGE");
    await nothingKept();
  });

  test("a client that aborts mid-upload leaves no row, no blob and no temporary file", async () => {
    const req = request(`${s.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.key}`, "content-type": "text/plain" },
    });
    req.on("error", () => {});
    req.write(Buffer.alloc(500, 3));
    // The upload is under way once its temporary file exists.
    await waitFor(() => blobTempsUnder(root).length > 0, 10_000, "the upload's temporary file");
    req.destroy();
    await waitFor(() => blobTempsUnder(root).length === 0, 10_000, "the temporary file to be removed");
    await nothingKept();
  });

  test("the maintenance pass removes the temporary files a killed write left, older than an hour, and no other file", async () => {
    mkdirSync(join(root, "files"), { recursive: true });
    const stale = join(root, "files", ".tmp-left-by-a-killed-upload");
    const fresh = join(root, "files", ".tmp-still-being-written");
    writeFileSync(stale, "half");
    writeFileSync(fresh, "half");
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    utimesSync(stale, twoHoursAgo, twoHoursAgo);
    const now = Date.now();
    await s.store.enqueue([
      { kind: "maintenance", tenantId: null, payload: {}, runAt: now, dedupeKey: `test-${now}` },
    ]);
    await waitFor(() => !blobTempsUnder(root).some((p) => p.endsWith("killed-upload")), 10_000, "the sweep");
    assert.ok(
      blobTempsUnder(root).some((p) => p.endsWith("still-being-written")),
      "a fresh temp is kept",
    );
    rmSync(fresh);
  });
});
