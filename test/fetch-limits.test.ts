import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createLonghaul, type Longhaul } from "../src/app.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask } from "../src/core/task-type.ts";
import { type ApiGatewayV2Event, toLambdaHandler } from "../src/http/lambda.ts";
import { parseBriefEvent } from "../src/providers/brief-event.ts";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";
import { captureLog, tempDir, waitFor } from "./helpers.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const MiB = 1024 * 1024;
const ADMIN_KEY = "admin-key-for-the-fetch-limits-test-0123456789";

/**
 * A request body made as it is read, `total` bytes in 64 KiB chunks, that counts what was
 * taken from it and whether it was canceled: a body read whole would be taken whole.
 */
function endlessBody(total: number) {
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  const seen = { pulled: 0, canceled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (seen.pulled >= total) return controller.close();
      seen.pulled += chunk.length;
      controller.enqueue(chunk);
    },
    cancel() {
      seen.canceled = true;
    },
  });
  return { stream, seen };
}

const post = (url: string, body: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
  new Request(url, { method: "POST", headers, body, duplex: "half" } as RequestInit);

function signed(id: string, body: string): Record<string, string> {
  const at = Math.floor(Date.now() / 1000);
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(at),
    "webhook-signature": signStandardWebhook({ id, timestampS: at, body, secret: SECRET }),
  };
}

/** A provider whose jobs a signed webhook to `/hooks/fake` reports on. */
const withFakeSource = {
  providers: [
    {
      name: "fake",
      create: async () => ({ jobId: "j", status: "running" as const }),
      parseEvent: parseBriefEvent,
    },
  ],
  sources: { fake: { provider: "fake", scheme: "standard-webhooks", secrets: [SECRET] } },
  publicUrl: "https://app.example.com",
};

describe("lh.fetch reads a body only as far as the route's limit", () => {
  const tmp = tempDir();
  let lh: Longhaul;
  let key: string;
  before(async () => {
    lh = await createLonghaul({
      databaseUrl: `sqlite:${join(tmp.dir, "fetch.db")}`,
      tasks: [defineTask("noop", async () => 1)],
      ...withFakeSource,
      logger: captureLog().log,
      role: "api",
    });
    key = newApiKey();
    await lh.store.ensureTenant({ id: "tn_a", name: "a", keyHash: hashApiKey(key) });
  });
  after(async () => {
    await lh.close();
    tmp.cleanup();
  });

  test("a 300 MB webhook streamed without Content-Length is refused with 413 after about the source's limit", async () => {
    const { stream, seen } = endlessBody(300 * MiB);
    const res = await lh.fetch(post("http://x/hooks/fake", stream, { "content-type": "application/json" }));
    assert.equal(res.status, 413);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, "PAYLOAD_TOO_LARGE");
    await waitFor(() => seen.canceled, 10_000, "the request body to be canceled");
    // The 1 MiB limit, and what the streams between buffer ahead of the reader.
    assert.ok(seen.pulled < 2 * MiB, `read ${seen.pulled} bytes of a body refused at 1 MiB`);
  });

  test("a 200 MB task submission streamed without Content-Length is 413 after about limits.submit_max_bytes (32 MiB)", async () => {
    const { stream, seen } = endlessBody(200 * MiB);
    const res = await lh.fetch(
      post("http://x/v1/tasks", stream, {
        "content-type": "application/json",
        authorization: `Bearer ${key}`,
      }),
    );
    assert.equal(res.status, 413);
    await waitFor(() => seen.canceled, 10_000, "the request body to be canceled");
    // Only the submit takes more than 1 MiB (its input may go to the blob store); what the
    // streams between buffer ahead of the reader comes on top.
    assert.ok(seen.pulled < 33 * MiB, `read ${seen.pulled} bytes of a body refused at 32 MiB`);
  });

  test("a declared Content-Length over the limit is refused before the body is read", async () => {
    for (const [url, headers] of [
      ["http://x/hooks/fake", { "content-type": "application/json" }],
      ["http://x/v1/tasks", { "content-type": "application/json", authorization: `Bearer ${key}` }],
      ["http://x/v1/approvals/v1.abc.def", { "content-type": "application/x-www-form-urlencoded" }],
    ] as const) {
      const { stream, seen } = endlessBody(300 * MiB);
      const res = await lh.fetch(post(url, stream, { ...headers, "content-length": String(300 * MiB) }));
      assert.equal(res.status, 413, url);
      await waitFor(() => seen.canceled, 10_000, "the request body to be canceled");
      assert.ok(seen.pulled <= 128 * 1024, `${url}: read ${seen.pulled} bytes before refusing`);
    }
  });

  test("an approval form streamed past 64 kB is 413", async () => {
    const { stream, seen } = endlessBody(50 * MiB);
    const res = await lh.fetch(
      post("http://x/v1/approvals/v1.abc.def", stream, {
        "content-type": "application/x-www-form-urlencoded",
      }),
    );
    assert.equal(res.status, 413);
    await waitFor(() => seen.canceled, 10_000, "the request body to be canceled");
    assert.ok(seen.pulled < MiB, `read ${seen.pulled} bytes of a form refused at 64 kB`);
  });

  test("a request refused before its body is needed (no API key) reads none of it", async () => {
    const { stream, seen } = endlessBody(200 * MiB);
    const res = await lh.fetch(post("http://x/v1/tasks", stream, { "content-type": "application/json" }));
    assert.equal(res.status, 401);
    await waitFor(() => seen.canceled, 10_000, "the request body to be canceled");
    assert.ok(seen.pulled <= 128 * 1024, `read ${seen.pulled} bytes`);
  });

  test("a signed webhook streamed in chunks without Content-Length verifies and is recorded", async () => {
    const body = JSON.stringify({
      id: "evt_stream",
      type: "job.succeeded",
      data: { job_id: "j", output: 1 },
    });
    const bytes = new TextEncoder().encode(body);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 7) controller.enqueue(bytes.slice(i, i + 7));
        controller.close();
      },
    });
    const res = await lh.fetch(post("http://x/hooks/fake", stream, signed("evt_stream", body)));
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { received: true, duplicate: false });
  });
});

describe("lh.fetch without a client address counts no shared bucket", () => {
  const tmp = tempDir();
  let lh: Longhaul;
  let logs: ReturnType<typeof captureLog>;
  before(async () => {
    logs = captureLog("warn");
    lh = await createLonghaul({
      databaseUrl: `sqlite:${join(tmp.dir, "limits.db")}`,
      ...withFakeSource,
      logger: logs.log,
      role: "api",
      limits: { unauthenticated_per_min: 3, hooks_per_min: 3, approvals_per_min: 3 },
      clientAddress: (r) => r.headers.get("cf-connecting-ip"),
    });
  });
  after(async () => {
    await lh.close();
    tmp.cleanup();
  });

  const badKey = (headers: Record<string, string> = {}, remoteAddress?: string) =>
    lh.fetch(
      new Request("http://x/v1/tasks", { headers: { authorization: "Bearer lh_nope", ...headers } }),
      remoteAddress ? { remoteAddress } : {},
    );

  test("junk with a bad key from unknown addresses never locks out another client", async () => {
    for (let i = 0; i < 10; i++) assert.equal((await badKey()).status, 401);
    for (let i = 0; i < 10; i++) {
      const res = await lh.fetch(new Request("http://x/v1/approvals/v1.x.y"));
      assert.notEqual(res.status, 429);
    }
    for (let i = 0; i < 10; i++) {
      const res = await lh.fetch(new Request("http://x/hooks/fake", { method: "POST", body: "{}" }));
      assert.equal(res.status, 401);
    }
    // The provider's real delivery, from an address just as unknown, still gets through.
    const body = JSON.stringify({ id: "evt_real", type: "job.running", data: { job_id: "j" } });
    const real = await lh.fetch(
      new Request("http://x/hooks/fake", { method: "POST", headers: signed("evt_real", body), body }),
    );
    assert.equal(real.status, 200, await real.clone().text());
  });

  test("a known address, given per call or found by clientAddress, is limited on its own", async () => {
    for (let i = 0; i < 3; i++) assert.equal((await badKey({}, "203.0.113.9")).status, 401);
    assert.equal((await badKey({}, "203.0.113.9")).status, 429);
    assert.equal((await badKey({}, "203.0.113.10")).status, 401);
    for (let i = 0; i < 3; i++)
      assert.equal((await badKey({ "cf-connecting-ip": "198.51.100.4" })).status, 401);
    assert.equal((await badKey({ "cf-connecting-ip": "198.51.100.4" })).status, 429);
    assert.equal((await badKey({ "cf-connecting-ip": "198.51.100.5" })).status, 401);
  });

  test("requests without an address are warned of once", () => {
    const warned = logs.lines.filter((l) => String(l.msg).includes("without its client's address"));
    assert.equal(warned.length, 1);
  });
});

describe("the Lambda adapter routes the event's path, whatever its Host header says", () => {
  const tmp = tempDir();
  let lh: Longhaul;
  before(async () => {
    lh = await createLonghaul({
      databaseUrl: `sqlite:${join(tmp.dir, "lambda.db")}`,
      logger: captureLog().log,
      role: "api",
      adminKey: ADMIN_KEY,
    });
  });
  after(async () => {
    await lh.close();
    tmp.cleanup();
  });

  test("a Host of h/v1/admin/tenants# does not turn GET /healthz into the admin tenants list", async () => {
    const handler = toLambdaHandler(lh);
    const event = {
      version: "2.0",
      rawPath: "/healthz",
      rawQueryString: "",
      headers: { host: "h/v1/admin/tenants#", authorization: `Bearer ${ADMIN_KEY}` },
      requestContext: { http: { method: "GET", sourceIp: "203.0.113.7" } },
      isBase64Encoded: false,
    } as ApiGatewayV2Event;
    const res = await handler(event);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(JSON.parse(res.body), { status: "ok", store: "ok" });
    const query = await handler({ ...event, rawPath: "/openapi.json", rawQueryString: "a=1#x" });
    assert.equal(query.statusCode, 200);
    assert.ok(JSON.parse(query.body).openapi);
  });
});
