import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { CHROMIUM, openBrowser } from "./browser.ts";
import { freePort, waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

// The dashboard's outbound tab lists event sinks beside webhook endpoints, with their delivery
// logs, and never shows a broker URL's credentials. No broker is needed: the sink points at a
// port nothing listens on, so its delivery fails and the log says why.

const BUILT = new URL("../web/dist/index.html", import.meta.url);

if (!existsSync(CHROMIUM)) {
  test("event sinks in the dashboard", { skip: `${CHROMIUM} is missing` }, () => {});
} else {
  describe("event sinks in the dashboard", () => {
    let stack: Stack;
    let profile: string;
    let browser: BrowserContext;
    let page: Page;
    const errors: string[] = [];

    before(async () => {
      assert.ok(existsSync(BUILT), "web/dist is missing: run `npm run build` (npm install runs it).");
      stack = await startStack({
        dashboard: true,
        outbound: { retry_schedule_s: [0, 60], allow_private_networks: true },
      });
      profile = mkdtempSync(join(tmpdir(), "longhaul-chromium-"));
      browser = await openBrowser(profile);
      page = browser.pages()[0] ?? (await browser.newPage());
      page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
    });
    after(async () => {
      await browser?.close();
      await stack?.close();
      if (profile) rmSync(profile, { recursive: true, force: true });
    });

    test("a sink, its kind and target, and its failing delivery are shown, without the URL's password", async () => {
      const port = await freePort();
      const sink = await stack.api("/v1/sinks", {
        body: {
          kind: "redis",
          url: `redis://app:pw-dashboard-hidden@127.0.0.1:${port}`,
          stream: "events",
          events: ["task.created"],
        },
      });
      assert.equal(sink.status, 201, JSON.stringify(sink.body));
      const r = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "hi" } } });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      await waitFor(
        async () =>
          (await stack.api(`/v1/sinks/${sink.body.id}/deliveries`)).body.data[0]?.last_error ?? null,
        30_000,
        "a failed attempt",
      );

      await page.goto(`${stack.url}/#/admin/outbound`);
      const card = page.locator(".card.sink");
      await waitFor(async () => ((await card.count()) === 1 ? true : null), 30_000, "the sink's card");
      const head = ((await card.textContent()) ?? "").replace(/\s+/g, " ");
      assert.match(head, new RegExp(`redis://127\\.0\\.0\\.1:${port}`));
      assert.match(head, /redis sink, stream events/);
      const rows = card.locator("tbody tr");
      await waitFor(async () => ((await rows.count()) === 1 ? true : null), 30_000, "one delivery row");
      const row = ((await rows.first().textContent()) ?? "").replace(/\s+/g, " ");
      assert.match(row, /task\.created/);
      assert.match(row, /pending/);
      assert.match(row, /Could not publish to redis:\/\/127\.0\.0\.1/);
      assert.ok(!(await page.content()).includes("pw-dashboard-hidden"));
      assert.deepEqual(errors, []);
    });
  });
}
