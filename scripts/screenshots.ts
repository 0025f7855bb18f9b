// Screenshots of the dashboard for the README: `node --import tsx scripts/screenshots.ts`.
// Runs a dev-like deployment (SQLite in a temporary directory, the simulator, the demo task
// types, the dashboard signed in as its tenant), submits demo tasks, waits for them to settle,
// and captures the task list, a task's detail and a graph task into docs/*.png with Debian's
// Chromium (`apt-get install chromium`; override the path with CHROMIUM).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import type { Page } from "playwright-core";
import { createLonghaul } from "../src/app.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { demoTaskTypes } from "../src/demo/index.ts";
import { simProvider } from "../src/providers/sim/sim-provider.ts";
import { startSimulator } from "../src/providers/sim/simulator.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { openBrowser } from "../test/browser.ts";

const OUT = fileURLToPath(new URL("../docs/", import.meta.url));
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const tmp = mkdtempSync(join(tmpdir(), "longhaul-screenshots-"));

const store = new SqliteStore({ path: join(tmp, "longhaul.db") });
await store.migrate();
// Webhooks arrive after a random delay, some after the reconciler's first poll: the timeline
// then shows polls, and webhooks that come second as duplicates.
const sim = await startSimulator({
  secret: SECRET,
  seed: 7,
  chaos: { delayMs: [50, 2600] },
  onError: () => {},
});
const key = newApiKey();
await store.createTenant({ name: "development", keyHash: hashApiKey(key) });
const app = await createLonghaul({
  store,
  logger: pino({ level: "silent" }),
  taskTypes: demoTaskTypes(tmp),
  providers: [simProvider({ baseUrl: sim.url })],
  sources: { sim: { provider: "sim", scheme: "standard-webhooks", secrets: [SECRET] } },
  pollAfterMs: 1200,
  worker: { idleMs: 100 },
  dashboard: { devApiKey: key },
});
const url = await app.listen({ port: 0 });

async function api(path: string, body?: unknown): Promise<any> {
  const res = await fetch(url + path, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return res.json();
}
const submit = async (type: string, input: unknown, extra: Record<string, string> = {}) =>
  (await api("/v1/tasks", { type, input, ...extra })).task_id as string;

const users = ["u_ada", "u_grace", "u_linus", "u_margaret"];
const echoes: string[] = [];
const texts = ["quarterly report", "invoice 2291", "release notes", "support ticket #4411", "contract.pdf"];
for (const [i, text] of texts.entries()) {
  echoes.push(
    await submit(
      "demo.echo",
      { text, delay_ms: 150 + i * 120 },
      { user_id: users[i % users.length]!, trace_id: `tr_${(0x5a1f00 + i * 977).toString(16)}` },
    ),
  );
}
await submit("demo.echo", { text: "broken upload", fail: true }, { user_id: "u_grace" });
await submit("rag_summary", {
  document: "Long-running tasks suspend and resume on signed webhooks. ".repeat(20),
});
const canceled = await submit("demo.callback", {});
await submit("demo.approval", {}, { user_id: "u_ada" });
await submit("demo.callback", { timeout_s: 86_400 }, { user_id: "u_linus" });
await submit("demo.echo", { text: "video render", delay_ms: 3_600_000 }, { user_id: "u_margaret" });
const graph = await submit(
  "graph",
  {
    input: { document_url: "https://files.example.com/contract.pdf", manager: "dana@example.com" },
    nodes: [
      { id: "ocr", kind: "job", with: { input: { text: "{{ input.document_url }}" } } },
      {
        id: "summary",
        kind: "job",
        needs: ["ocr"],
        with: { input: { instruction: "summarize", document: "{{ nodes.ocr.output.text }}" } },
      },
      {
        id: "entities",
        kind: "job",
        needs: ["ocr"],
        with: { input: { text: "{{ nodes.ocr.output.text }}" } },
      },
      { id: "classify", kind: "job", needs: ["ocr"], with: { input: { text: "contract" } } },
      {
        id: "review",
        kind: "approval",
        needs: ["summary", "entities"],
        with: { approvers: ["{{ input.manager }}"], title: "Publish the summary?" },
      },
      { id: "cooldown", kind: "sleep", needs: ["review"], with: { duration: "1h" } },
      { id: "archive", kind: "job", needs: ["classify"], with: { input: { text: "archived" } } },
      {
        id: "publish",
        kind: "job",
        needs: ["cooldown", "archive"],
        when: "{{ nodes.review.output.approved }} == true",
        with: { input: { text: "{{ nodes.summary.output.summary }}" } },
      },
    ],
  },
  { user_id: "u_ada", trace_id: "tr_contract_review" },
);
await api(`/v1/tasks/${canceled}/cancel`, {});

async function until(what: string, ok: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
const ended = (s: string) => ["succeeded", "failed", "canceled", "timed_out"].includes(s);
await until("the echo tasks to end", async () => {
  const all = await Promise.all(echoes.map((id) => api(`/v1/tasks/${id}`)));
  return all.every((t) => ended(t.status));
});
await until("the graph to wait for its review", async () => {
  const t = await api(`/v1/tasks/${graph}`);
  const waiting = t.steps.some(
    (s: { id: string; status: string }) => s.id === "review" && s.status === "waiting",
  );
  return (
    waiting &&
    t.steps.some((s: { id: string; status: string }) => s.id === "archive" && s.status === "succeeded")
  );
});
// Late webhooks still arriving after the poll applied the result.
await new Promise((r) => setTimeout(r, 3000));

// The task whose ledger shows the most: webhooks, a poll, and a duplicate.
let detail = echoes[0]!;
let best = -1;
for (const id of echoes) {
  const t = await api(`/v1/tasks/${id}/timeline`);
  const kinds = new Set<string>(
    t.entries
      .filter((e: { kind: string }) => e.kind === "delivery")
      .map((e: any) => `${e.origin}:${e.verdict}`),
  );
  if (kinds.size > best) {
    best = kinds.size;
    detail = id;
  }
}

const profile = mkdtempSync(join(tmpdir(), "longhaul-chromium-"));
const browser = await openBrowser(profile, {
  viewport: { width: 1280, height: 800 },
});
const page = browser.pages()[0] ?? (await browser.newPage());
mkdirSync(OUT, { recursive: true });

/** The page from the top down to the bottom of `selector` (or the whole page), at most `max` high. */
async function capture(p: Page, file: string, selector: string | null, max = 1500): Promise<void> {
  await p.waitForTimeout(400);
  const bottom = selector
    ? await p.locator(selector).evaluate((el) => el.getBoundingClientRect().bottom + window.scrollY + 16)
    : await p.evaluate(() => document.documentElement.scrollHeight);
  const height = Math.min(max, Math.ceil(bottom));
  await p.screenshot({ path: join(OUT, file), fullPage: true, clip: { x: 0, y: 0, width: 1280, height } });
  console.log(`docs/${file} (1280×${height})`);
}

await page.goto(`${url}/`);
await page.locator('[data-live="open"]').waitFor();
await page.locator("table.tasks tbody tr").first().waitFor();
await capture(page, "dashboard-list.png", "nav.pager");

await page.goto(`${url}/#/tasks/${detail}`);
await page.locator(".timeline .tl").first().waitFor();
await capture(page, "dashboard-detail.png", ".card:has(.timeline)");

await page.goto(`${url}/#/tasks/${graph}`);
await page.locator("g[data-node]").first().waitFor();
await capture(page, "dashboard-graph.png", ".card:has(.graph)");

await browser.close();
await app.close();
await sim.close();
rmSync(profile, { recursive: true, force: true });
rmSync(tmp, { recursive: true, force: true });
