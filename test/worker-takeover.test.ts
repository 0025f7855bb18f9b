import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { createLonghaul } from "../src/app.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { takeoverTask } from "./fixtures/takeover-task.ts";
import { quietLog, tempDir, waitFor } from "./helpers.ts";

test("a worker killed mid-task loses its lease and another worker finishes the task without re-running completed steps", async () => {
  const tmp = tempDir();
  const db = join(tmp.dir, "longhaul.db");
  const log = join(tmp.dir, "steps.log");
  const store = new SqliteStore({ path: db });
  await store.migrate();
  const tenant = await store.createTenant({ name: "t", keyHash: "k" });
  const { task } = await store.submitTask({
    tenantId: tenant.id,
    type: "takeover",
    input: {},
    clientRequestId: null,
    userId: null,
    traceId: null,
  });

  const child = spawn(process.execPath, ["--import", "tsx", "test/fixtures/worker-process.ts"], {
    env: {
      ...process.env,
      LONGHAUL_TEST_DB: db,
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
  await waitFor(() => steps().includes("b"), 15_000, "the first worker to reach step b");
  child.kill("SIGKILL");
  await new Promise((r) => child.once("exit", r));

  // The second worker does not take the orphan at start: it must wait for the lease to expire.
  const app = await createLonghaul({
    store,
    logger: quietLog(),
    role: "worker",
    taskTypes: [takeoverTask(log, false)],
    worker: { leaseMs: 600, idleMs: 50, releaseOrphansOnStart: false },
  });
  app.start();
  try {
    const done = await waitFor(
      async () => {
        const d = await store.getTask(tenant.id, task.id);
        return d?.task.status === "succeeded" ? d : null;
      },
      15_000,
      "the task to succeed on the second worker",
    );
    assert.equal(done.task.output, "done");
    assert.deepEqual(steps(), ["a", "b", "b"], "step a ran once; only the interrupted step b ran again");
  } finally {
    await app.close();
    tmp.cleanup();
  }
});
