import assert from "node:assert/strict";
import { join } from "node:path";
import { after, test } from "node:test";
import { startSimulator } from "../src/providers/sim/simulator.ts";
import { tempDir } from "./helpers.ts";

// The simulator's Files and Batch APIs over HTTP, without longhaul: OpenAI's shapes, one
// batch per Idempotency-Key, failures and expiries on a first run only, cancel, and a batch
// that outlives a restart on its state file.

const SECRET = "whsec_c2ltdWxhdG9yIHRlc3Qgc2VjcmV0IGZvciBsb25naGF1bA==";
const tmp = tempDir();
after(() => tmp.cleanup());

async function upload(url: string, lines: unknown[], key?: string): Promise<string> {
  const form = new FormData();
  form.append("purpose", "batch");
  form.append("file", new Blob([lines.map((l) => `${JSON.stringify(l)}\n`).join("")]), "in.jsonl");
  const res = await fetch(`${url}/v1/files`, {
    method: "POST",
    body: form,
    headers: key ? { "idempotency-key": key } : {},
  });
  assert.equal(res.status, 200);
  return ((await res.json()) as { id: string }).id;
}

async function createBatch(url: string, key: string | null, body: unknown) {
  const res = await fetch(`${url}/v1/batches`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const line = (custom_id: string, text: string) => ({
  custom_id,
  method: "POST",
  url: "/v1/responses",
  body: { text },
});

test("a batch answers in OpenAI's shapes; one per key; sim_fail and sim_expire act on a first run only", async () => {
  const sim = await startSimulator({ secret: SECRET, defaultDurationMs: 0, onError: () => {} });
  try {
    const lines = [line("a", "one two"), line("b", "three"), line("c", "four")];
    const file = await upload(sim.url, lines, "k1:input");
    assert.equal(await upload(sim.url, lines, "k1:input"), file, "the same upload key, the same file");
    assert.equal(
      (await createBatch(sim.url, null, { input_file_id: file, endpoint: "/v1/responses" })).status,
      400,
    );
    const body = {
      input_file_id: file,
      endpoint: "/v1/responses",
      metadata: { longhaul_task: "t1", sim_fail: "b", sim_expire: ["c"] },
    };
    const created = await createBatch(sim.url, "k1", body);
    assert.equal(created.status, 201);
    assert.equal(created.body.object, "batch");
    assert.equal((await createBatch(sim.url, "k1", body)).body.id, created.body.id);

    const batch = (await (await fetch(`${sim.url}/v1/batches/${created.body.id}`)).json()) as Record<
      string,
      any
    >;
    assert.equal(batch.status, "completed");
    assert.deepEqual(batch.request_counts, { total: 3, completed: 1, failed: 2 });
    const read = async (id: string) =>
      (await (await fetch(`${sim.url}/v1/files/${id}/content`)).text())
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
    const [ok] = await read(batch.output_file_id);
    assert.equal(ok.custom_id, "a");
    assert.equal(ok.response.status_code, 200);
    assert.equal(ok.response.body.output_text, "one two");
    assert.deepEqual(ok.response.body.usage, { input_tokens: 2, output_tokens: 2, total_tokens: 4 });
    const [failed, ...more] = await read(batch.error_file_id);
    assert.equal(failed.custom_id, "b");
    assert.equal(failed.response.status_code, 500);
    assert.equal(more.length, 0, "the expired request is in no file");

    // The same requests again in the same scope (the task): they run.
    const again = await createBatch(sim.url, "k2", {
      ...body,
      input_file_id: await upload(sim.url, lines.slice(1)),
    });
    const second = (await (await fetch(`${sim.url}/v1/batches/${again.body.id}`)).json()) as Record<
      string,
      any
    >;
    assert.deepEqual(second.request_counts, { total: 2, completed: 2, failed: 0 });
    assert.equal(second.error_file_id, null);
  } finally {
    await sim.close();
  }
});

test("cancel ends a running batch, not a completed one; a batch outlives a restart on its state file", async () => {
  const stateFile = join(tmp.dir, "sim.db");
  const first = await startSimulator({ secret: SECRET, stateFile, onError: () => {} });
  const file = await upload(first.url, [line("a", "x")]);
  const long = await createBatch(first.url, "long", {
    input_file_id: file,
    endpoint: "/v1/responses",
    metadata: { sim_delay_ms: 600_000 },
  });
  const kept = await createBatch(first.url, "kept", {
    input_file_id: file,
    endpoint: "/v1/responses",
    metadata: { sim_delay_ms: 600_000 },
  });
  const cancel = () => fetch(`${first.url}/v1/batches/${long.body.id}/cancel`, { method: "POST" });
  const canceled = await cancel();
  assert.equal(canceled.status, 200);
  assert.equal(((await canceled.json()) as { status: string }).status, "cancelled");
  assert.equal((await cancel()).status, 200, "cancelling a cancelled batch again changes nothing");
  const quick = await createBatch(first.url, "quick", {
    input_file_id: file,
    endpoint: "/v1/responses",
    metadata: { sim_delay_ms: 0 },
  });
  const late = await fetch(`${first.url}/v1/batches/${quick.body.id}/cancel`, { method: "POST" });
  assert.equal(late.status, 409, "a completed batch cannot be cancelled");
  await first.close();

  const second = await startSimulator({ secret: SECRET, stateFile, onError: () => {} });
  try {
    const b = (await (await fetch(`${second.url}/v1/batches/${kept.body.id}`)).json()) as Record<string, any>;
    assert.equal(b.status, "in_progress");
    assert.equal(
      (await createBatch(second.url, "kept", { input_file_id: file, endpoint: "/v1/responses" })).body.id,
      kept.body.id,
    );
  } finally {
    await second.close();
  }
});
