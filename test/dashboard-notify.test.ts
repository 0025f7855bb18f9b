import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { CHROMIUM, openBrowser } from "./browser.ts";
import { waitFor } from "./helpers.ts";
import { startReceiver } from "./notify-sinks.ts";
import { type Stack, startStack } from "./stack.ts";
import { end, get } from "./task-waits.ts";

// The dashboard shows an approval's messages and its audit: where each message went and how,
// who decided and through which channel.

const BUILT = new URL("../web/dist/index.html", import.meta.url);
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

if (!existsSync(CHROMIUM)) {
  test("the approval audit in a browser", { skip: `${CHROMIUM} is missing` }, () => {});
} else {
  describe("the approval audit in a browser", () => {
    let stack: Stack;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let profile: string;
    let browser: BrowserContext;
    let page: Page;
    const errors: string[] = [];

    before(async () => {
      assert.ok(existsSync(BUILT), "web/dist is missing: run `npm run build` (npm install runs it).");
      receiver = await startReceiver();
      stack = await startStack({
        dashboard: true,
        outbound: { allow_private_networks: true },
        notify: { webhook_secret: SECRET },
      });
      profile = mkdtempSync(join(tmpdir(), "longhaul-chromium-"));
      browser = await openBrowser(profile);
      page = browser.pages()[0] ?? (await browser.newPage());
      page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
    });
    after(async () => {
      await browser?.close();
      await stack?.close();
      await receiver?.close();
      if (profile) rmSync(profile, { recursive: true, force: true });
    });

    test("a decided approval shows its notifications and who decided through which channel", async () => {
      const r = await stack.api("/v1/tasks", {
        body: {
          type: "graph",
          input: {
            nodes: [
              {
                id: "review",
                kind: "approval",
                with: {
                  approvers: ["dana@acme.test", "erin@acme.test"],
                  notify: [{ channel: "webhook", url: `${receiver.url}/approvals` }],
                },
              },
            ],
          },
        },
      });
      const id = r.body.task_id as string;
      const bodies = await waitFor(
        () => {
          const mine = receiver.hits.map((h) => JSON.parse(h.body)).filter((b) => b.data.task_id === id);
          return mine.length === 2 ? mine : null;
        },
        30_000,
        "two messages",
      );
      const erin = bodies.find((b) => b.data.approver === "erin@acme.test")!;
      const res = await fetch(erin.data.links.approve_url, { method: "POST" });
      assert.equal(res.status, 200);
      await end(stack, id);
      await waitFor(
        async () =>
          (await get(stack, id)).steps[0].notifications.every((n: { status: string }) => n.status === "sent")
            ? true
            : null,
        30_000,
        "both messages sent",
      );

      await page.goto(`${stack.url}/#/tasks/${id}`);
      const rows = page.locator("table.notifications tbody tr");
      await waitFor(async () => ((await rows.count()) === 2 ? true : null), 30_000, "two notification rows");
      const texts = (await rows.allTextContents()).map((t) => t.replace(/\s+/g, " "));
      for (const who of ["dana@acme.test", "erin@acme.test"]) {
        const row = texts.find((t) => t.includes(who));
        assert.ok(row, `a row for ${who}`);
        assert.match(row!, /webhook/);
        assert.match(row!, /sent/);
      }
      const decision = (await page.locator(".decisions li").first().textContent())?.replace(/\s+/g, " ");
      assert.match(decision ?? "", /erin@acme\.test approved/);
      assert.match(decision ?? "", /via link/);
      assert.deepEqual(errors, []);
    });
  });
}
