import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { BrowserContext } from "playwright-core";
import { defineTask } from "../src/core/task-type.ts";
import { CHROMIUM, openBrowser } from "./browser.ts";
import { writeRoutes } from "./route-table.ts";
import { type Stack, startStack } from "./stack.ts";

// examples/browser-follow, driven in Chromium: its backend mints a task's read token with the
// tenant's key, and the page follows that task over SSE and WebSocket with the token alone.

const twoSteps = defineTask("browser.steps", async (_input: unknown, step) => {
  await step.run("a", () => 1);
  await step.run("b", () => 2);
  return { ok: true };
});

let stack: Stack;
let example: { url: string; close: () => Promise<void> };
let browser: BrowserContext;
let profile: string;

before(async () => {
  stack = await startStack({ taskTypes: [twoSteps] });
  // @ts-expect-error: the example is plain JavaScript, run as its README runs it.
  const { startExample } = await import("../examples/browser-follow/server.mjs");
  example = await startExample({
    longhaulUrl: stack.url,
    apiKey: stack.key,
    taskType: "browser.steps",
    input: {},
  });
  profile = mkdtempSync(join(tmpdir(), "longhaul-follow-"));
  browser = await openBrowser(profile);
});

after(async () => {
  await browser?.close();
  await example?.close();
  await stack?.close();
  rmSync(profile, { recursive: true, force: true });
});

test("the page follows its task over SSE and WebSocket with a task's read token until task.succeeded; the token opens nothing else", {
  skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing`,
}, async () => {
  const page = await browser.newPage();
  const sent: string[] = [];
  page.on("request", (r) => sent.push(`${r.url()} ${JSON.stringify(r.headers())}`));
  const follow = page.waitForResponse((r) => r.url().endsWith("/follow"));
  await page.goto(example.url);
  const { task_id: taskId, token } = await (await follow).json();
  await page.waitForFunction(
    () =>
      document.getElementById("sse-state")?.textContent === "task.succeeded" &&
      document.getElementById("ws-state")?.textContent === "task.succeeded",
    undefined,
    { timeout: 20_000 },
  );
  const lists = await page.evaluate(() =>
    ["sse", "ws"].map((id) => [...document.querySelectorAll(`#${id} li`)].map((li) => li.textContent)),
  );
  // Both transports saw the same events, in the same order, from the first.
  assert.deepEqual(lists[0], lists[1]);
  assert.match(lists[0]![0]!, /task\.created$/);
  assert.match(lists[0]!.at(-1)!, /task\.succeeded$/);
  // The page never held the tenant's key.
  assert.ok(!(await page.content()).includes(stack.key));
  assert.ok(!sent.some((s) => s.includes(stack.key)), "no request from the page carries the API key");

  // The same token, on another task and on every write route.
  const other = (await stack.api("/v1/tasks", { method: "POST", body: { type: "browser.steps", input: {} } }))
    .body.task_id;
  for (const path of [`/v1/tasks/${other}`, `/v1/events?task_id=${other}`]) {
    const r = await fetch(`${stack.url}${path}${path.includes("?") ? "&" : "?"}token=${token}`);
    assert.equal(r.status, 403, path);
    assert.equal(((await r.json()) as any).error.code, "TOKEN_SCOPE");
  }
  const routes = writeRoutes(stack);
  assert.ok(routes.length >= 12);
  for (const { method, url } of routes) {
    const path = url.replace(/:token\b/g, token).replace(/:[a-z_]+/g, taskId);
    const r = await fetch(`${stack.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: "{}",
    });
    assert.ok(r.status === 401 || r.status === 403, `${method} ${url}: ${r.status}`);
  }
});
