import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { createLonghaul } from "../src/app.ts";
import { FsBlobStore } from "../src/blobs/fs-blob-store.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { openaiProvider } from "../src/providers/openai/openai-provider.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { oaiBatchTask } from "./fixtures/batch-task.ts";
import { type BatchLine, okLine, startBatchStandin } from "./fixtures/openai-batch-standin.ts";
import { quietLog, tempDir, waitFor } from "./helpers.ts";
import { apiOf, exited } from "./processes.ts";
import { SIM_SECRET } from "./stack.ts";

// A worker process killed with SIGKILL while it downloads a batch's output file: the stand-in
// serves half the file and holds the connection until the worker is dead. Another worker then
// applies the event again: the file is downloaded whole, and the job is applied once.

const KEY = "sk-test-openai-crash";
const N = 200;
const LEASE_MS = 600;

const answers = (lines: BatchLine[]) => ({
  output: lines
    .map(({ custom_id, body }) =>
      okLine(custom_id, {
        output_text: `answer ${body.n}`,
        usage: { input_tokens: 2, output_tokens: 3, total_tokens: 5 },
      }),
    )
    .join(""),
  error: "",
});

test("a worker killed mid-download: after a restart the output file is whole and the job applied once", async () => {
  const tmp = tempDir();
  const db = join(tmp.dir, "longhaul.db");
  const blobDir = join(tmp.dir, "blobs");
  const store = new SqliteStore({ path: db });
  await store.migrate();
  const key = newApiKey();
  const tenant = await store.createTenant({ name: "t", keyHash: hashApiKey(key) });
  let apiUrl = "";
  const standin = await startBatchStandin({
    apiKey: KEY,
    results: answers,
    hooksUrl: () => `${apiUrl}/hooks/oai`,
    secret: SIM_SECRET,
  });
  standin.servings.push("hold");
  const common = {
    store,
    logger: quietLog(),
    taskTypes: [oaiBatchTask],
    providers: [openaiProvider({ name: "oai", apiKey: KEY, baseUrl: standin.baseUrl, timeoutMs: 600_000 })],
    sources: { oai: { provider: "oai", secrets: [SIM_SECRET] } },
    blobs: new FsBlobStore({ root: blobDir }),
  };
  // The API alone in this process: it records the stand-in's webhook for the workers.
  const api = await createLonghaul({ ...common, role: "api" });
  apiUrl = await api.listen({ port: 0 });
  const child = spawn(process.execPath, ["--import", "tsx", "test/fixtures/batch-worker-process.ts"], {
    env: {
      ...process.env,
      LONGHAUL_TEST_DB: db,
      LONGHAUL_TEST_BLOBS: blobDir,
      LONGHAUL_TEST_OPENAI_URL: standin.baseUrl,
      LONGHAUL_TEST_OPENAI_KEY: KEY,
      LONGHAUL_TEST_SECRET: SIM_SECRET,
      LONGHAUL_TEST_PUBLIC_URL: apiUrl,
      LONGHAUL_TEST_LEASE_MS: String(LEASE_MS),
    },
    stdio: "inherit",
  });
  let worker: Awaited<ReturnType<typeof createLonghaul>> | null = null;
  try {
    const requests = Array.from({ length: N }, (_, i) => ({ custom_id: `r-${i}`, body: { n: i } }));
    const submitted = await apiOf(apiUrl, key)("/v1/tasks", { type: "oai_batch", input: { requests } });
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const taskId = submitted.body.task_id as string;

    await standin.held;
    child.kill("SIGKILL");
    await exited(child);
    standin.release();

    const batchId = [...standin.batches.keys()][0]!;
    const outputId = String(standin.batches.get(batchId)!.output_file_id);
    const outputKey = `providers/oai/batches/${batchId}/output.jsonl`;
    assert.equal(await common.blobs.stat(outputKey), null, "the half download left nothing under the key");

    worker = await createLonghaul({
      ...common,
      store: new SqliteStore({ path: db }),
      role: "worker",
      publicUrl: apiUrl,
      worker: { leaseMs: LEASE_MS, idleMs: 50, releaseOrphansOnStart: false },
    });
    worker.start();
    const done = await waitFor(
      async () => {
        const d = await store.getTask(tenant.id, taskId);
        return d && ["succeeded", "failed", "canceled", "timed_out"].includes(d.task.status) ? d : null;
      },
      30_000,
      "the task to end on the second worker",
    );
    assert.equal(done.task.status, "succeeded", JSON.stringify(done.task.error));
    const output = done.task.output as { items: { custom_id: string; status: string }[] };
    assert.equal(output.items.length, N);
    assert.ok(output.items.every((it, i) => it.custom_id === `r-${i}` && it.status === "succeeded"));

    const kept = readFileSync(join(blobDir, ...outputKey.split("/")));
    assert.deepEqual(kept, standin.files.get(outputId), "the kept output file is the whole file");
    assert.equal(standin.requests.filter((r) => r.path === `/v1/files/${outputId}/content`).length, 2);

    // Applied once: one job, ended once, its tokens counted once for the tenant.
    assert.equal(done.jobs.length, 1);
    assert.deepEqual(done.jobs[0]!.usage, {
      prompt_tokens: 2 * N,
      completion_tokens: 3 * N,
      total_tokens: 5 * N,
    });
    const usage = await store.usage(tenant.id, 30);
    assert.equal(
      usage!.daily.reduce((sum, d) => sum + d.tokens, 0),
      5 * N,
    );
    const ended = (await store.getTask(tenant.id, taskId))!.steps.filter((s) => s.stepId === "review");
    assert.equal(ended.length, 1);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await worker?.close();
    await api.close();
    await standin.close();
    tmp.cleanup();
  }
});
