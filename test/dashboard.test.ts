import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { CHROMIUM, openBrowser } from "./browser.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const BUILT = new URL("../web/dist/index.html", import.meta.url);

const ended = new Set(["succeeded", "failed", "canceled", "timed_out"]);

async function submit(stack: Stack, type: string, input: unknown): Promise<string> {
  const r = await stack.api("/v1/tasks", { body: { type, input } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.task_id;
}

const task = async (stack: Stack, id: string) => (await stack.api(`/v1/tasks/${id}`)).body;

const route = (page: Page, hash: string) =>
  page.evaluate((h) => {
    location.hash = h;
  }, hash);

if (!existsSync(CHROMIUM)) {
  if (process.env.CI === "true") {
    test("Chromium is installed for the dashboard tests", () => {
      assert.fail(`${CHROMIUM} is missing; .ci/run installs it with apt-get install chromium.`);
    });
  } else {
    console.warn(
      `\n${"!".repeat(72)}\n  DASHBOARD BROWSER TESTS SKIPPED: ${CHROMIUM} is missing.\n` +
        `  Install it with: apt-get install -y chromium\n${"!".repeat(72)}\n`,
    );
    test("the dashboard in a browser", { skip: `${CHROMIUM} is missing` }, () => {});
  }
} else {
  describe("the dashboard in a browser", () => {
    let stack: Stack;
    let profile: string;
    let browser: BrowserContext;
    let page: Page;
    const errors: string[] = [];

    before(async () => {
      assert.ok(existsSync(BUILT), "web/dist is missing: run `npm run build` (npm install runs it).");
      stack = await startStack({ dashboard: true });
      profile = mkdtempSync(join(tmpdir(), "longhaul-chromium-"));
      browser = await openBrowser(profile);
      page = browser.pages()[0] ?? (await browser.newPage());
      page.on("console", (m) => {
        if (m.type() === "error") errors.push(`console: ${m.text()}`);
      });
      page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
    });
    after(async () => {
      await browser?.close();
      await stack?.close();
      if (profile) rmSync(profile, { recursive: true, force: true });
    });

    test("a task submitted through the API appears on the open list without a reload, and its status follows", async () => {
      await page.goto(`${stack.url}/`);
      await page.locator('[data-live="open"]').waitFor({ timeout: 10_000 });
      await page.evaluate(() => {
        (window as unknown as { sameDocument: boolean }).sameDocument = true;
      });
      const id = await submit(stack, "demo.echo", { text: "live", delay_ms: 600 });
      const row = page.locator(`tr[data-task="${id}"]`);
      await row.waitFor({ timeout: 10_000 });
      await row.locator(".badge.s-succeeded").waitFor({ timeout: 15_000 });
      assert.equal(
        await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument),
        true,
      );
    });

    test("the detail timeline shows the job and its webhook deliveries as they arrive", async () => {
      const id = await submit(stack, "demo.echo", { text: "ledger", delay_ms: 800 });
      await route(page, `#/tasks/${id}`);
      await page.locator("h1", { hasText: id }).waitFor();
      await page.locator(".subtitle .badge.s-succeeded").waitFor({ timeout: 15_000 });
      const applied = page.locator('.tl-delivery[data-verdict="applied"]');
      await waitFor(async () => (await applied.count()) >= 2, 10_000, "both webhooks in the timeline");
      const t = await task(stack, id);
      const jobId = t.jobs[0].job_id as string;
      const text = (await page.locator(".timeline").textContent()) ?? "";
      assert.match(text, new RegExp(`sim:${jobId}`));
      assert.match(text, /Webhook job\.running/);
      assert.match(text, /Webhook job\.succeeded/);
      assert.match(text, /signature verified/);
      assert.match(text, /Job created at the provider/);
      const steps = (await page.locator("table.steps").textContent()) ?? "";
      assert.match(steps, new RegExp(`sim:${jobId}`));
      assert.equal(
        await page.locator("[data-tokens]").getAttribute("data-tokens"),
        String(t.jobs[0].usage.total_tokens),
      );
    });

    test("approving in the approval inbox resumes the task", async () => {
      const id = await submit(stack, "demo.approval", {});
      await waitFor(async () => (await task(stack, id)).status === "waiting", 10_000, "the approval to wait");
      await route(page, "#/approvals");
      const card = page.locator(`article[data-task="${id}"]`);
      await card.waitFor({ timeout: 10_000 });
      await card.locator('input[name="approver"]').fill("dana");
      await card.locator('input[name="comment"]').fill("ship it");
      await card.getByRole("button", { name: "Approve" }).click();
      const t = await waitFor(
        async () => {
          const x = await task(stack, id);
          return ended.has(x.status) ? x : null;
        },
        10_000,
        "the task to resume",
      );
      assert.equal(t.status, "succeeded");
      assert.deepEqual(t.output, { approved: true, by: null, claimed_by: "dana", comment: "ship it" });
      await card.waitFor({ state: "detached", timeout: 10_000 });

      // The approval's link names nobody: the timeline shows the typed name as claimed.
      await route(page, `#/tasks/${id}`);
      const decided = page.locator('.timeline [data-type="step.decided"] .tl-title');
      await decided.waitFor({ timeout: 10_000 });
      assert.equal(
        (await decided.textContent())?.replace(/\s+/g, " ").trim(),
        "dana (claimed) approved step approval",
      );
      assert.match((await decided.locator(".claim").getAttribute("title")) ?? "", /not verified/);
    });

    test("a graph task is drawn as its graph, and its nodes change state live", async () => {
      const id = await submit(stack, "graph", {
        nodes: [
          { id: "legal", kind: "callback" },
          { id: "finance", kind: "callback" },
          { id: "publish", kind: "job", needs: ["legal", "finance"], with: { input: { text: "go" } } },
        ],
      });
      const waiting = await waitFor(
        async () => {
          const x = await task(stack, id);
          return x.steps.filter((s: { status: string }) => s.status === "waiting").length === 2 ? x : null;
        },
        10_000,
        "both callbacks to wait",
      );
      await route(page, `#/tasks/${id}`);
      const node = (n: string, state: string) => page.locator(`g[data-node="${n}"][data-state="${state}"]`);
      await node("legal", "waiting").waitFor();
      await node("finance", "waiting").waitFor();
      await node("publish", "pending").waitFor();
      for (const s of waiting.steps) {
        const r = await fetch(s.callback_url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ ok: true }),
        });
        assert.equal(r.status, 200);
      }
      await node("publish", "succeeded").waitFor({ timeout: 15_000 });
      await node("legal", "succeeded").waitFor();
      assert.equal(await page.locator("svg path.edge").count(), 2);
    });

    test("nothing was logged as an error in the page", () => {
      assert.deepEqual(errors, []);
    });
  });

  describe("the dashboard without a development key", () => {
    let stack: Stack;
    let profile: string;
    let browser: BrowserContext;

    before(async () => {
      stack = await startStack();
      profile = mkdtempSync(join(tmpdir(), "longhaul-chromium-"));
      browser = await openBrowser(profile);
    });
    after(async () => {
      await browser?.close();
      await stack?.close();
      if (profile) rmSync(profile, { recursive: true, force: true });
    });

    test("asks for an API key, and keeps it for the tab after a reload", async () => {
      const page = browser.pages()[0] ?? (await browser.newPage());
      const id = await submit(stack, "demo.echo", { text: "mine" });
      await page.goto(`${stack.url}/`);
      await page.getByRole("heading", { name: "Sign in to longhaul" }).waitFor();
      await page.locator('input[name="api-key"]').fill(stack.key);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator(`tr[data-task="${id}"]`).waitFor({ timeout: 10_000 });
      await page.reload();
      await page.locator(`tr[data-task="${id}"]`).waitFor({ timeout: 10_000 });
      assert.equal(await page.evaluate(() => sessionStorage.getItem("longhaul.apiKey")), stack.key);
    });
  });
}
