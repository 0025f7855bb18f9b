import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { BrowserContext } from "playwright-core";
import { CHROMIUM, openBrowser } from "./browser.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

// Debian's Chromium (test/browser.ts); no browser is downloaded.
const BUILT = new URL("../web/dist/index.html", import.meta.url);
const ADMIN_KEY = "admin-key-for-the-refusals-page-0123456789";

const skip = !existsSync(CHROMIUM) && process.env.CI !== "true" ? `${CHROMIUM} is missing` : false;

let stack: Stack;
let profile: string;
let browser: BrowserContext;
before(async () => {
  if (skip) return;
  assert.ok(existsSync(BUILT), "web/dist is missing: run `npm run build:web`.");
  stack = await startStack({ dashboard: true, adminKey: ADMIN_KEY });
  profile = mkdtempSync(join(tmpdir(), "longhaul-chromium-"));
  browser = await openBrowser(profile);
});
after(async () => {
  await browser?.close();
  await stack?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

test("the admin inbox lists refused webhooks with their source, reason and count", { skip }, async () => {
  for (let i = 0; i < 2; i++) {
    const r = await fetch(`${stack.url}/hooks/sim`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": `rid-page-${i}` },
      body: '{"id":"evt_unsigned"}',
    });
    assert.equal(r.status, 401);
  }
  await waitFor(async () => {
    const r = await fetch(`${stack.url}/v1/admin/webhook-refusals`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    const page = (await r.json()) as { data: { count: number }[] };
    return page.data[0]?.count === 2;
  });
  const page = browser.pages()[0] ?? (await browser.newPage());
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.addInitScript((key) => sessionStorage.setItem("longhaul.adminKey", key), ADMIN_KEY);
  await page.goto(`${stack.url}/#/admin/inbox?status=refused`);
  const row = page.locator("table.refusals tbody tr");
  await row.first().waitFor({ timeout: 10_000 });
  assert.equal(await row.count(), 1, "one row per source, reason and minute");
  const cells = await row.first().locator("td").allTextContents();
  assert.deepEqual(cells.slice(1, 5), ["sim", "SIGNATURE_MISSING", "2", "rid-page-1"]);
  assert.match(cells[5] ?? "", /127\.0\.0\.1/);
  assert.deepEqual(errors, []);
});
