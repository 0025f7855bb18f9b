import assert from "node:assert/strict";
import { cpSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { createLonghaul } from "../src/app.ts";
import { LonghaulError, NonRetriableError, RetryAfterError, StepError } from "../src/core/errors.ts";
import { defineTask } from "../src/core/task-type.ts";
import { ProviderError } from "../src/providers/provider.ts";
import { quietLog, tempDir } from "./helpers.ts";

// A second copy of the package's source, as a global CLI beside an app's own copy, a monorepo
// or pnpm would load it: other module instances, other classes.
const tmp = tempDir("lh-copy-");
after(() => tmp.cleanup());
cpSync(new URL("../src", import.meta.url), join(tmp.dir, "src"), { recursive: true });
const other = (await import(
  pathToFileURL(join(tmp.dir, "src/core/errors.ts")).href
)) as typeof import("../src/core/errors.ts");
const otherProvider = (await import(
  pathToFileURL(join(tmp.dir, "src/providers/provider.ts")).href
)) as typeof import("../src/providers/provider.ts");

test("the copy's classes are other classes, yet instanceof agrees across the two", () => {
  assert.notEqual(other.NonRetriableError, NonRetriableError);
  assert.ok(new other.NonRetriableError("x") instanceof NonRetriableError);
  assert.ok(new NonRetriableError("x") instanceof other.NonRetriableError);
  assert.ok(new other.LonghaulError("BAD_REQUEST", "x") instanceof LonghaulError);
  assert.ok(new other.RetryAfterError("x", 5) instanceof RetryAfterError);
  assert.ok(new other.StepError("s", { code: "STEP_FAILED", message: "x" }) instanceof StepError);
  assert.ok(new otherProvider.ProviderError("x", { retriable: false }) instanceof ProviderError);
  assert.ok(new other.NonRetriableError("x") instanceof Error);
  // Not every error is every branded class.
  assert.equal(new Error("x") instanceof NonRetriableError, false);
  assert.equal(new other.RetryAfterError("x", 5) instanceof NonRetriableError, false);
  assert.equal(new LonghaulError("BAD_REQUEST", "x") instanceof NonRetriableError, false);
  assert.equal((null as unknown as object) instanceof NonRetriableError, false);
});

test("a user's subclass is an instance of the branded class, and its own check stays its own", () => {
  class Refused extends other.NonRetriableError {}
  assert.ok(new Refused("x") instanceof NonRetriableError);
  assert.ok(new Refused("x") instanceof Refused);
  assert.equal(new NonRetriableError("x") instanceof Refused, false);
});

test("task code throwing the other copy's NonRetriableError fails the task NON_RETRIABLE after one run", async () => {
  let runs = 0;
  const refuse = defineTask("refuse", async (_input, step) =>
    step.run("once", () => {
      runs++;
      throw new other.NonRetriableError("the card was declined");
    }),
  );
  const lh = await createLonghaul({
    databaseUrl: `sqlite:${join(tmp.dir, "copies.db")}`,
    taskTypes: [refuse],
    logger: quietLog(),
  });
  try {
    const { task_id } = await lh.submit({ type: "refuse", input: {} });
    await lh.drain({ maxMs: 20_000 });
    const task = (await lh.store.getTask("tn_default", task_id))?.task;
    assert.equal(task?.status, "failed");
    assert.equal(task?.error?.code, "NON_RETRIABLE");
    assert.equal(task?.error?.message, "the card was declined");
    assert.equal(runs, 1);
  } finally {
    await lh.close();
  }
});
