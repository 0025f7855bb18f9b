import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { NonRetriableError } from "../src/core/errors.ts";
import { defineTask } from "../src/core/task-type.ts";
import { CHROMIUM, openBrowser } from "./browser.ts";
import { waitFor } from "./helpers.ts";
import { startStack } from "./stack.ts";

// The dashboard's task view in Chromium: a failed task has a Re-run button, which makes the new
// task and goes to it; the new task links back to the one it re-runs, and that one to it.

let attempts = 0;
const failsFirst = defineTask("web.rerun", async (_input: unknown, step) => {
  const first = await step.run("first", async () => "kept");
  await step.run("second", async () => {
    attempts += 1;
    if (attempts === 1) throw new NonRetriableError("the first run fails");
  });
  return { first };
});

test("a failed task's Re-run button makes the new task and shows it, linked both ways", {
  skip:
    existsSync(CHROMIUM) && existsSync("web/dist/index.html")
      ? false
      : "Chromium or the built dashboard is missing",
}, async () => {
  const stack = await startStack({ taskTypes: [failsFirst], dashboard: true });
  const profile = mkdtempSync(join(tmpdir(), "longhaul-rerun-web-"));
  const browser = await openBrowser(profile);
  try {
    const id = (await stack.api("/v1/tasks", { body: { type: "web.rerun", input: {} } })).body.task_id;
    await waitFor(async () => (await stack.api(`/v1/tasks/${id}`)).body.status === "failed");
    const page = await browser.newPage();
    await page.goto(`${stack.url}/#/tasks/${id}`);
    const button = page.getByRole("button", { name: "Re-run", exact: true });
    await button.waitFor({ timeout: 15_000 });
    await button.click();
    // The view moves to the new task: its heading is another id, and it names the old one.
    await page.waitForSelector(`[data-rerun-of="${id}"]`, { timeout: 15_000 });
    const newId = (await page.textContent("h1"))!.trim();
    assert.notEqual(newId, id);
    assert.match(newId, /^t_/);
    // Its timeline says what it re-runs and how many steps it reused.
    await page.getByText("from the failed step, 1 step reused").waitFor({ timeout: 15_000 });
    const task = await waitFor(async () => {
      const r = await stack.api(`/v1/tasks/${newId}`);
      return r.body.status === "succeeded" ? r.body : null;
    });
    assert.equal(task.rerun_of, id);
    assert.deepEqual(task.output, { first: "kept" });
    assert.equal(attempts, 2);
    // Ended with success: no Re-run there. The old task lists its re-run.
    await page.goto(`${stack.url}/#/tasks/${id}`);
    await page.waitForSelector(`[data-rerun="${newId}"]`, { timeout: 15_000 });
    await page.goto(`${stack.url}/#/tasks/${newId}`);
    await page.waitForSelector(`[data-rerun-of="${id}"]`, { timeout: 15_000 });
    await page.waitForSelector(".subtitle .badge.s-succeeded", { timeout: 15_000 });
    assert.equal(await page.getByRole("button", { name: "Re-run", exact: true }).count(), 0);
  } finally {
    await browser.close();
    await stack.close();
    rmSync(profile, { recursive: true, force: true });
  }
});
