import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { defineTask } from "../src/core/task-type.ts";
import { CHROMIUM, openBrowser } from "./browser.ts";
import { waitFor } from "./helpers.ts";
import { startStack } from "./stack.ts";

// The dashboard's task view in Chromium: a task's artifacts are listed with name, size and type,
// and the link downloads the artifact's bytes with the session's key.

const withArtifact = defineTask("web.artifact", async (_input: unknown, step) => {
  await step.artifact("summary.csv", "a,b\n1,2\n", { contentType: "text/csv" });
  return { ok: true };
});

test("the task view lists the task's artifacts and downloads one", {
  skip:
    existsSync(CHROMIUM) && existsSync("web/dist/index.html")
      ? false
      : "Chromium or the built dashboard is missing",
}, async () => {
  const stack = await startStack({ taskTypes: [withArtifact], dashboard: true });
  const profile = mkdtempSync(join(tmpdir(), "longhaul-artifacts-web-"));
  const browser = await openBrowser(profile, { acceptDownloads: true });
  try {
    const id = (await stack.api("/v1/tasks", { body: { type: "web.artifact", input: {} } })).body.task_id;
    await waitFor(async () => (await stack.api(`/v1/tasks/${id}`)).body.status === "succeeded");
    const page = await browser.newPage();
    await page.goto(`${stack.url}/#/tasks/${id}`);
    await page.waitForSelector("table.artifacts a", { timeout: 15_000 });
    const rows = await page.$$eval("table.artifacts tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].slice(0, 3).map((td) => td.textContent)),
    );
    assert.deepEqual(rows, [["summary.csv", "8 B", "text/csv"]]);
    const download = page.waitForEvent("download");
    await page.click("table.artifacts a");
    const file = await download;
    assert.equal(file.suggestedFilename(), "summary.csv");
    assert.equal(readFileSync(await file.path(), "utf8"), "a,b\n1,2\n");
  } finally {
    await browser.close();
    await stack.close();
    rmSync(profile, { recursive: true, force: true });
  }
});
