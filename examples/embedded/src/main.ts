// longhaul inside this process: the two task types of tasks.ts on a SQLite file, the provider
// simulator standing in for an LLM API, and a person's approval given through its link.
// Prints one JSON line per task ({task_id, type, status, output}) and exits 0 only when both
// succeeded.
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { simProvider } from "longhaul";
import { createLonghaul } from "longhaul/server";
import { startSimulator } from "longhaul/testing";
import { signOff, summarize } from "./tasks.js";

process.env.LONGHAUL_LOG_LEVEL ??= "warn"; // keep the output to the result lines
const dataDir = process.env.EXAMPLE_DATA_DIR ?? ".longhaul";
mkdirSync(dataDir, { recursive: true });

// The simulator signs its webhooks with this secret; the `sim` source verifies them with it.
const simSecret = `whsec_${randomBytes(24).toString("base64")}`;
const sim = await startSimulator({ port: 0, secret: simSecret });

const lh = await createLonghaul({
  databaseUrl: `sqlite:${join(dataDir, "example.db")}`,
  tasks: [summarize, signOff],
  providers: [simProvider({ baseUrl: sim.url })],
  sources: { sim: { provider: "sim", scheme: "standard-webhooks", secrets: [simSecret] } },
  tenant: "tn_example",
});
// The simulator reports back over HTTP, so this process listens (on a free port of the loopback
// address, which becomes the public URL of the webhooks and the approval links); listen() also
// starts the worker loop, as lh.start() does alone.
await lh.listen({ port: 0, host: "127.0.0.1" });

let ok = false;
try {
  const job = await lh.submit({
    type: summarize.name,
    input: { document: "Revenue grew in the third quarter. Costs stayed flat. The outlook is steady." },
  });
  const approval = await lh.submit({
    type: signOff.name,
    input: { title: "Publish the Q3 report?", amount: 1200 },
  });

  // Ana's own link, once the task has suspended on the approval; she would open it in a
  // browser (a page with both buttons) or be sent her one-click approve_url.
  const link = await until(async () => {
    const detail = await lh.get(approval.task_id);
    const step = detail.steps.find((s) => s.id === "sign-off" && s.status === "waiting");
    return step?.approvals?.find((a) => a.approver === "ana@acme.test")?.approval_url;
  });
  const decided = await fetch(link, {
    method: "POST",
    headers: { "content-type": "application/json" },
    // The link is Ana's: it names her, so the body need not.
    body: JSON.stringify({ decision: "approve", comment: "Numbers checked." }),
  });
  if (!decided.ok) throw new Error(`the approval link answered ${decided.status}: ${await decided.text()}`);

  const ended = ["succeeded", "failed", "canceled", "timed_out"];
  ok = true;
  for (const { task_id } of [job, approval]) {
    const t = await until(async () => {
      const detail = await lh.get(task_id);
      return ended.includes(detail.status) ? detail : undefined;
    });
    console.log(JSON.stringify({ task_id, type: t.type, status: t.status, output: t.output }));
    if (t.status !== "succeeded") ok = false;
  }
} catch (err) {
  console.error(err);
} finally {
  await lh.close();
  await sim.close();
}
process.exit(ok ? 0 : 1);

/** Polls `read` every 100 ms until it answers something, for at most 60 s. */
async function until<T>(read: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("gave up waiting after 60 s");
    await new Promise((r) => setTimeout(r, 100));
  }
}
