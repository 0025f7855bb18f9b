import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Fastify from "fastify";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { dashboardRoutes } from "../src/http/dashboard-routes.ts";
import { isLoopbackAddress, isLoopbackHost } from "../src/http/loopback.ts";
import { deliveries } from "../src/http/timeline-routes.ts";
import type { InboxEventRow } from "../src/store/store.ts";
import { tempDir, waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

describe("dashboard files", () => {
  const tmp = tempDir();
  const dist = join(tmp.dir, "dist");
  before(() => {
    mkdirSync(join(dist, "assets"), { recursive: true });
    writeFileSync(
      join(dist, "index.html"),
      "<!doctype html><html><head><title>t</title></head><body></body></html>",
    );
    writeFileSync(join(dist, "assets", "index-Ab12.js"), "console.log(1)");
    writeFileSync(join(tmp.dir, "secret.txt"), "no");
  });
  after(() => tmp.cleanup());

  const serve = async (opts: Parameters<typeof dashboardRoutes>[1]) => {
    const app = Fastify();
    dashboardRoutes(app, opts);
    await app.ready();
    return app;
  };

  test("the page carries the development key only when one is given, escaped, and is never cached", async () => {
    const dev = await serve({ distDir: dist, devApiKey: 'lh_a"b<c>' });
    const r = await dev.inject({ url: "/" });
    assert.equal(r.statusCode, 200);
    assert.match(r.headers["content-type"] as string, /^text\/html/);
    assert.equal(r.headers["cache-control"], "no-store");
    assert.match(r.headers["content-security-policy"] as string, /default-src 'self'/);
    assert.match(r.headers["content-security-policy"] as string, /frame-ancestors 'none'/);
    assert.match(r.headers["content-security-policy"] as string, /base-uri 'none'/);
    assert.equal(r.headers["x-content-type-options"], "nosniff");
    assert.match(r.body, /<meta name="longhaul-dev-key" content="lh_a&quot;b&lt;c&gt;"><\/head>/);

    const serve_ = await serve({ distDir: dist });
    const plain = await serve_.inject({ url: "/" });
    assert.equal(plain.statusCode, 200);
    assert.doesNotMatch(plain.body, /longhaul-dev-key/);
  });

  test("the development key goes only to a loopback peer that names a loopback host", async () => {
    const app = await serve({ distDir: dist, devApiKey: "lh_dev_key_123" });
    await app.listen({ port: 0, host: "127.0.0.1" });
    const port = (app.server.address() as AddressInfo).port;
    // Over real HTTP, with the Host header as a browser (or a rebinding page) would send it.
    const get = (host: string) =>
      new Promise<string>((resolve, reject) => {
        http
          .get({ host: "127.0.0.1", port, path: "/", headers: { host } }, (res) => {
            let body = "";
            res.on("data", (c: Buffer) => {
              body += c.toString("utf8");
            });
            res.on("end", () => resolve(body));
          })
          .on("error", reject);
      });
    try {
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "localhost", `[::1]:${port}`]) {
        assert.match(await get(host), /content="lh_dev_key_123"/, host);
      }
      for (const host of [
        "evil.example",
        `evil.example:${port}`,
        `127.0.0.1.evil.example:${port}`,
        `10.0.0.5:${port}`,
      ]) {
        const page = await get(host);
        assert.match(page, /<title>t<\/title>/, host);
        assert.doesNotMatch(page, /lh_dev_key_123|longhaul-dev-key/, host);
      }
    } finally {
      await app.close();
    }
    // A peer on another machine gets no key, whatever Host it names.
    const remote = await serve({ distDir: dist, devApiKey: "lh_dev_key_123" });
    const r = await remote.inject({
      url: "/",
      remoteAddress: "192.168.1.20",
      headers: { host: "127.0.0.1:8787" },
    });
    assert.equal(r.statusCode, 200);
    assert.doesNotMatch(r.body, /lh_dev_key_123/);
  });

  test("loopback means 127.0.0.0/8, ::1 and IPv4-mapped 127.x; loopback hosts are localhost, 127.0.0.1, [::1]", () => {
    for (const a of ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "[::1]"])
      assert.ok(isLoopbackAddress(a), a);
    for (const a of [
      "10.0.0.1",
      "::ffff:10.0.0.1",
      "0.0.0.0",
      "::",
      "192.168.1.1",
      "fe80::1",
      "",
      undefined,
    ]) {
      assert.ok(!isLoopbackAddress(a), String(a));
    }
    for (const h of ["localhost", "LOCALHOST:3000", "127.0.0.1:8787", "[::1]:1"])
      assert.ok(isLoopbackHost(h), h);
    for (const h of ["evil.example", "localhost.evil.example", "127.0.0.2", "[::1]x", "", undefined]) {
      assert.ok(!isLoopbackHost(h), String(h));
    }
  });

  test("hashed assets are served with their type and cached for a year; nothing else is", async () => {
    const app = await serve({ distDir: dist });
    const js = await app.inject({ url: "/assets/index-Ab12.js" });
    assert.equal(js.statusCode, 200);
    assert.equal(js.headers["content-type"], "text/javascript; charset=utf-8");
    assert.equal(js.headers["cache-control"], "public, max-age=31536000, immutable");
    for (const url of [
      "/assets/..%2Fsecret.txt",
      "/assets/..%2F..%2Fsecret.txt",
      "/assets/missing.js",
      "/assets/x.exe",
    ]) {
      assert.equal((await app.inject({ url })).statusCode, 404, url);
    }
  });

  test("a missing build answers 503 with how to build it", async () => {
    const app = await serve({ distDir: join(tmp.dir, "nowhere") });
    const r = await app.inject({ url: "/" });
    assert.equal(r.statusCode, 503);
    assert.match(r.body, /npm run build/);
  });
});

const row = (over: Partial<InboxEventRow>): InboxEventRow => ({
  id: "evt_1",
  source: "sim",
  provider: "sim",
  eventId: "e1",
  body: Buffer.from("{}"),
  status: "applied",
  type: "job.succeeded",
  jobExternalId: "job_1",
  note: null,
  receivedAt: 1000,
  ...over,
});

test("a delivery's verdict tells a duplicate from a late result and an out-of-order state", () => {
  const v = deliveries([
    row({ id: "a", source: "poll", type: "job.succeeded" }),
    row({ id: "b", status: "ignored", type: "job.running", note: "job is already succeeded" }),
    row({ id: "c", status: "ignored", type: "job.succeeded", note: "job is already succeeded" }),
    row({ id: "d", status: "ignored", jobExternalId: "job_2", note: "late result: the step had timed out" }),
    row({ id: "e", status: "unmatched", jobExternalId: "job_3" }),
  ]);
  assert.deepEqual(
    v.map((d) => [d.id, d.origin, d.verdict, d.signature]),
    [
      ["a", "poll", "applied", null],
      ["b", "webhook", "out_of_order", "verified"],
      ["c", "webhook", "duplicate", "verified"],
      ["d", "webhook", "late", "verified"],
      ["e", "webhook", "unmatched", "verified"],
    ],
  );
});

describe("GET /v1/tasks/:id/timeline", () => {
  let stack: Stack;
  // Webhooks are held back past the reconciler's first poll, so the poll applies the result
  // and the webhooks that follow are recorded and ignored.
  before(async () => {
    stack = await startStack({ chaos: { delayMs: [1500, 1500] }, pollAfterMs: 100 });
  });
  after(() => stack.close());

  test("lists task events and every delivery of the task's jobs, by time, with polls and duplicates told apart", async () => {
    const r = await stack.api("/v1/tasks", {
      body: { type: "demo.echo", input: { text: "hi", delay_ms: 20 } },
    });
    const id = r.body.task_id as string;
    const timeline = await waitFor(
      async () => {
        const t = await stack.api(`/v1/tasks/${id}/timeline`);
        const d = t.body.entries.filter((e: { kind: string }) => e.kind === "delivery");
        return d.length >= 3 ? t.body : null;
      },
      10_000,
      "the poll and both webhooks",
    );
    const task = (await stack.api(`/v1/tasks/${id}`)).body;
    const jobId = task.jobs[0].job_id;
    const at = timeline.entries.map((e: { at: string }) => e.at);
    assert.deepEqual(at, [...at].sort(), "ordered by time");
    const types = timeline.entries.filter((e: any) => e.kind === "event").map((e: any) => e.type);
    assert.ok(
      types.includes("task.created") && types.includes("job.created") && types.includes("task.succeeded"),
    );
    const d = timeline.entries.filter((e: any) => e.kind === "delivery");
    for (const x of d) assert.equal(x.job_id, jobId);
    const poll = d.find((x: any) => x.origin === "poll");
    assert.ok(poll, "the reconciler's poll is listed");
    assert.equal(poll.verdict, "applied");
    assert.equal(poll.signature, null);
    const late = d.find((x: any) => x.origin === "webhook" && x.type === "job.succeeded");
    assert.equal(late.verdict, "duplicate");
    assert.equal(late.signature, "verified");
    assert.equal(timeline.truncated, false);
  });

  test("another tenant's key gets 404 for the timeline", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "mine" } } });
    const key = newApiKey();
    await stack.store.createTenant({ name: "other", keyHash: hashApiKey(key) });
    const other = await stack.api(`/v1/tasks/${r.body.task_id}/timeline`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(other.status, 404);
    assert.equal(other.body.error.code, "TASK_NOT_FOUND");
  });
});
