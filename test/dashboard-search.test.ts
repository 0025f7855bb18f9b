import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { z } from "zod";
import { task as defineTask } from "../src/core/task-type.ts";
import { CHROMIUM, openBrowser } from "./browser.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const BUILT = new URL("../web/dist/index.html", import.meta.url);

/** A type with a schema whose defaults prefill the form, and an output long enough to fold. */
const greet = defineTask({
  id: "test.greet",
  schema: z.object({ name: z.string().min(1).default("Ada"), lines: z.number().int().min(0).default(40) }),
  run: async (input) => ({
    greeting: `hello ${input.name}`,
    lines: Array.from({ length: input.lines }, (_, i) => i),
  }),
});

const ended = new Set(["succeeded", "failed", "canceled", "timed_out"]);

const route = (page: Page, hash: string) =>
  page.evaluate((h) => {
    location.hash = h;
  }, hash);

describe("the dashboard's forms and search in a browser", {
  skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing`,
}, () => {
  let stack: Stack;
  let profile: string;
  let browser: BrowserContext;
  let page: Page;
  const errors: string[] = [];
  const task = async (id: string) => (await stack.api(`/v1/tasks/${id}`)).body;
  const settled = (id: string) =>
    waitFor(
      async () => {
        const t = await task(id);
        return ended.has(t.status) ? t : null;
      },
      15_000,
      `task ${id} to end`,
    );
  const waiting = async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "demo.approval", input: {} } });
    await waitFor(
      async () => (await task(r.body.task_id)).status === "waiting",
      10_000,
      "the approval to wait",
    );
    return r.body.task_id as string;
  };

  before(async () => {
    assert.ok(existsSync(BUILT), "web/dist is missing: run `npm run build:web`.");
    stack = await startStack({ dashboard: true, taskTypes: [greet] });
    profile = mkdtempSync(join(tmpdir(), "longhaul-chromium-"));
    browser = await openBrowser(profile, {
      viewport: { width: 1280, height: 900 },
      // Not the server's zone, so a time shown in UTC by mistake would differ.
      timezoneId: "America/New_York",
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
    await page.goto(`${stack.url}/`);
  });
  after(async () => {
    await browser?.close();
    await stack?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  test("approving in the inbox with the comment and name left empty records the decision", async () => {
    const id = await waiting();
    await route(page, "#/approvals");
    const card = page.locator(`article[data-task="${id}"]`);
    await card.waitFor({ timeout: 10_000 });
    assert.equal(await card.locator('input[name="comment"]').inputValue(), "");
    await card.getByRole("button", { name: "Approve" }).click();
    const t = await settled(id);
    assert.equal(t.status, "succeeded");
    const step = t.steps.find((s: { kind: string }) => s.kind === "approval");
    assert.equal(step.decisions[0].decision, "approve");
    assert.equal(step.decisions[0].comment ?? null, null);
    await card.waitFor({ state: "detached", timeout: 10_000 });
  });

  test("rejecting on the task's page with an empty comment records the decision", async () => {
    const id = await waiting();
    await route(page, `#/tasks/${id}`);
    const form = page.locator(".approval-form");
    await form.waitFor({ timeout: 10_000 });
    await form.getByRole("button", { name: "Reject" }).click();
    const t = await settled(id);
    const step = t.steps.find((s: { kind: string }) => s.kind === "approval");
    assert.equal(step.decisions[0].decision, "reject");
    assert.equal(await page.locator(".bad", { hasText: "VALIDATION_FAILED" }).count(), 0);
  });

  let formTask = "";
  test("the new-task form starts from the schema's defaults, shows a refusal, and lands on the new task", async () => {
    await route(page, "#/new");
    const form = page.locator('form[aria-label="New task"]');
    await form.waitFor({ timeout: 10_000 });
    await form.locator('select[name="type"]').selectOption("test.greet");
    const input = form.locator('textarea[name="input"]');
    assert.deepEqual(JSON.parse(await input.inputValue()), { name: "Ada", lines: 40 });

    await input.fill("{ not json");
    await form.getByRole("button", { name: "Submit task" }).click();
    await form.locator('[data-error="INVALID_JSON"]').waitFor();
    await input.fill(JSON.stringify({ name: "" }));
    await form.getByRole("button", { name: "Submit task" }).click();
    const refusal = form.locator('[data-error="VALIDATION_FAILED"]');
    await refusal.waitFor({ timeout: 10_000 });
    assert.match((await refusal.textContent()) ?? "", /input\.name/);

    await input.fill(JSON.stringify({ name: "Grace", lines: 40 }));
    await form.locator('input[name="user_id"]').fill("u_form");
    await form.getByRole("button", { name: "Submit task" }).click();
    await page.waitForFunction(() => /^#\/tasks\/t_/.test(location.hash), null, { timeout: 10_000 });
    formTask = await page.evaluate(() => location.hash.slice("#/tasks/".length));
    await page.locator("h1", { hasText: formTask }).waitFor();
    const t = await settled(formTask);
    assert.equal(t.type, "test.greet");
    assert.equal(t.user_id, "u_form");
    assert.equal(t.output.greeting, "hello Grace");

    // The output's 40-odd lines are folded, with a control to show them all.
    const outputPane = page.locator(".card.two > div").nth(1);
    const toggle = outputPane.getByRole("button", { name: /Show all \d+ lines/ });
    await toggle.waitFor({ timeout: 10_000 });
    await toggle.click();
    await outputPane.getByRole("button", { name: "Fold" }).waitFor();
    // Times are in the viewer's zone, named, with the instant in UTC in the tooltip.
    const created = page.locator(".facts time").first();
    assert.match((await created.getAttribute("title")) ?? "", /^\d{4}-\d\d-\d\dT[\d:.]+Z \(UTC\)$/);
    assert.match((await created.locator(".zone").textContent()) ?? "", /^(EST|EDT|GMT-[45])$/);
  });

  test("the task list finds the task by type, status and a created-at range, and jumps to it by id", async () => {
    assert.ok(formTask, "the form's task");
    const t = await task(formTask);
    const created = Date.parse(t.created_at);
    await route(page, "#/tasks");
    const filters = page.locator('form[aria-label="Filters"]');
    await filters.waitFor();
    await filters.locator('select[name="status"]').selectOption("succeeded");
    await filters.locator('input[name="type"]').fill("test.greet");
    // datetime-local takes the viewer's wall-clock time: a minute either side of the creation.
    const local = (ms: number) =>
      page.evaluate(
        `(() => { const d = new Date(${ms}); const p = (n) => String(n).padStart(2, "0");
          return d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + "T" + p(d.getHours()) + ":" + p(d.getMinutes()); })()`,
      ) as Promise<string>;
    await filters.locator('input[name="created_after"]').fill(await local(created - 60_000));
    await filters.locator('input[name="created_before"]').fill(await local(created + 120_000));
    const row = page.locator(`tr[data-task="${formTask}"]`);
    await page.waitForFunction(
      () =>
        ["status=succeeded", "type=test.greet", "created_after=", "created_before="].every((p) =>
          location.hash.includes(p),
        ),
      null,
      { timeout: 10_000 },
    );
    // The unfiltered list showed the task too: wait for the filtered answer, the one row.
    await page.waitForFunction(() => document.querySelectorAll("tr[data-task]").length === 1, null, {
      timeout: 10_000,
    });
    await row.waitFor({ timeout: 10_000 });
    assert.equal(await page.locator("tr[data-task]").count(), 1);
    const hash = new URLSearchParams((await page.evaluate(() => location.hash)).split("?")[1]);
    assert.ok(Date.parse(hash.get("created_after")!) <= created);
    assert.ok(Date.parse(hash.get("created_before")!) > created);

    // A range that ends before the task was created leaves it out.
    await filters.locator('input[name="created_before"]').fill(await local(created - 60_000));
    await row.waitFor({ state: "detached", timeout: 10_000 });

    const goto = page.locator('form[aria-label="Go to a task"]');
    await goto.locator('input[name="task_id"]').fill("t_nosuchtask");
    await goto.getByRole("button", { name: "Open" }).click();
    await goto.locator('[role="alert"]', { hasText: "No task t_nosuchtask" }).waitFor();
    await goto.locator('input[name="task_id"]').fill(formTask);
    await goto.getByRole("button", { name: "Open" }).click();
    await page.locator("h1", { hasText: formTask }).waitFor({ timeout: 10_000 });
  });

  test("the stats page charts the hour's throughput and latency, and the day's", async () => {
    await route(page, "#/stats");
    await page.locator('[data-window="1h"]').waitFor({ timeout: 10_000 });
    const submitted = Number(await page.locator('[data-total="submitted"]').textContent());
    assert.ok(submitted >= 3, `submitted ${submitted}`);
    assert.ok(Number(await page.locator('[data-total="succeeded"]').textContent()) >= 3);
    const line = page.locator('[data-chart="throughput"] path[data-series="submitted"]');
    assert.match((await line.getAttribute("d")) ?? "", /^M[\d.]+,[\d.]+L/);
    assert.match(
      (await page.locator('[data-chart="latency"] path[data-series="p95"]').getAttribute("d")) ?? "",
      /M[\d.]+,[\d.]+/,
    );
    await page.getByRole("button", { name: "Last day" }).click();
    await page.locator('[data-window="24h"]').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('[data-chart="throughput"] rect.hit').count(), 96);
  });

  test("nothing was logged as an error in the page but the refusals the tests asked for", () => {
    // Chromium logs every 4xx answer; the form's 400 and the id search's 404 were the point.
    const unexpected = errors.filter(
      (e) => !/Failed to load resource: the server responded with a status of (400|404)/.test(e),
    );
    assert.deepEqual(unexpected, []);
    assert.ok(errors.length <= 2, errors.join("\n"));
  });
});
