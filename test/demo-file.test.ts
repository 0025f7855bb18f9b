import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

// Files in, artifacts out, as the done-when puts it, over real HTTP on a real SQLite
// file: an 8 MB file uploaded as a stream is used by `demo.file` by its file_id, the task's
// artifact downloads byte-identical (SHA-256 compared), and another tenant's key gets 404. The
// 100 MB run by hand under `longhaul dev` is in the README's Files section.

const SIZE = 8 * 1024 * 1024;

/** `size` bytes made chunk by chunk as they are sent, hashed on the way. */
function streamedBody(size: number): { body: ReadableStream<Uint8Array>; digest: () => string } {
  const hash = createHash("sha256");
  let sent = 0;
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= size) return controller.close();
      const n = Math.min(64 * 1024, size - sent);
      const chunk = Buffer.alloc(n, (i * 7) & 0xff);
      chunk.writeUInt32BE(i++, 0);
      hash.update(chunk);
      sent += n;
      controller.enqueue(chunk);
    },
  });
  return { body, digest: () => hash.digest("hex") };
}

async function sha256Of(res: Response): Promise<{ sha256: string; size: number }> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    hash.update(chunk);
    size += chunk.byteLength;
  }
  return { sha256: hash.digest("hex"), size };
}

describe("demo.file: a file in by file_id or url, its copy out as an artifact", () => {
  let s: Stack;
  let otherKey: string;
  const authed = (path: string, key = s.key) =>
    fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } });
  const ended = (id: string) =>
    waitFor(
      async () => {
        const r = await s.api(`/v1/tasks/${id}`);
        return ["succeeded", "failed", "canceled", "timed_out"].includes(r.body.status) ? r.body : null;
      },
      60_000,
      `task ${id} to end`,
    );

  before(async () => {
    s = await startStack({ outbound: { allow_private_networks: true } });
    otherKey = newApiKey();
    await s.store.createTenant({ name: "other", keyHash: hashApiKey(otherKey) });
  });
  after(() => s.close());

  test("an 8 MB streamed upload, used by file_id: the artifact downloads byte-identical; another tenant's key gets 404", async () => {
    const { body, digest } = streamedBody(SIZE);
    const uploaded = await fetch(`${s.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.key}`, "content-type": "application/octet-stream" },
      body,
      duplex: "half",
    } as RequestInit);
    const file = await uploaded.json();
    assert.equal(uploaded.status, 201, JSON.stringify(file));
    const sent = digest();
    assert.equal(file.sha256, sent);

    const submitted = await s.api("/v1/tasks", {
      body: { type: "demo.file", input: { file_id: file.file_id } },
    });
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const task = await ended(submitted.body.task_id);
    assert.equal(task.status, "succeeded", JSON.stringify(task.error));
    assert.deepEqual(task.output, { artifact: "copy", size: SIZE, sha256: sent });
    assert.equal(task.artifacts.length, 1);

    const download = await authed(`/v1/tasks/${submitted.body.task_id}/artifacts/copy`);
    assert.equal(download.status, 200);
    assert.equal(download.headers.get("content-length"), String(SIZE));
    assert.deepEqual(await sha256Of(download), { sha256: sent, size: SIZE });

    const theirs = await authed(`/v1/tasks/${submitted.body.task_id}/artifacts/copy`, otherKey);
    assert.equal(theirs.status, 404);
    assert.equal((await theirs.json()).error.code, "ARTIFACT_NOT_FOUND");
    const theirFile = await authed(`/v1/files/${file.file_id}/content`, otherKey);
    assert.equal(theirFile.status, 404);
    assert.equal((await theirFile.json()).error.code, "FILE_NOT_FOUND");
  });

  test("another tenant's file_id is refused at submit; a file deleted before the run fails the step at once", async () => {
    const theirs = await (
      await fetch(`${s.url}/v1/files`, {
        method: "POST",
        headers: { authorization: `Bearer ${otherKey}`, "content-type": "text/plain" },
        body: "their bytes",
      })
    ).json();
    const refused = await s.api("/v1/tasks", {
      body: { type: "demo.file", input: { file_id: theirs.file_id } },
    });
    assert.equal(refused.status, 404);
    assert.equal(refused.body.error.code, "FILE_NOT_FOUND");

    const mine = await (
      await fetch(`${s.url}/v1/files`, {
        method: "POST",
        headers: { authorization: `Bearer ${s.key}`, "content-type": "text/plain" },
        body: "soon gone",
      })
    ).json();
    // Deleted while the task is queued: the step that reads it finds nothing, and cannot later.
    await s.app.worker?.stop();
    const queued = await s.api("/v1/tasks", {
      body: { type: "demo.file", input: { file_id: mine.file_id } },
    });
    assert.equal(queued.status, 202);
    assert.equal(
      (
        await fetch(`${s.url}/v1/files/${mine.file_id}`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${s.key}` },
        })
      ).status,
      204,
    );
    s.app.start();
    const task = await ended(queued.body.task_id);
    assert.equal(task.status, "failed");
    assert.equal(task.error.code, "FILE_NOT_FOUND", JSON.stringify(task.error));
    assert.equal(task.steps[0].attempts, 1, "not retried");
    assert.deepEqual(task.artifacts, []);
  });

  test("a {url} is streamed into the artifact the same way", async () => {
    const bytes = Buffer.alloc(300_000, 9);
    const origin = createServer((_req, res) => {
      res.setHeader("content-length", bytes.length);
      res.end(bytes);
    });
    await new Promise<void>((resolve) => origin.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(origin.address() as AddressInfo).port}/data.bin`;
      const submitted = await s.api("/v1/tasks", { body: { type: "demo.file", input: { url } } });
      assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
      const task = await ended(submitted.body.task_id);
      assert.equal(task.status, "succeeded", JSON.stringify(task.error));
      const expected = createHash("sha256").update(bytes).digest("hex");
      assert.equal(task.output.sha256, expected);
      assert.deepEqual(await sha256Of(await authed(`/v1/tasks/${submitted.body.task_id}/artifacts/copy`)), {
        sha256: expected,
        size: bytes.length,
      });
    } finally {
      origin.close();
    }
  });

  test("an input that is not a file reference is refused at submit", async () => {
    const r = await s.api("/v1/tasks", { body: { type: "demo.file", input: { path: "/etc/passwd" } } });
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /file_id/);
  });
});
