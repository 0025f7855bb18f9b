import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { LonghaulClient } from "../src/client/index.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

interface Hit {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * Whether a receiver holding `secret` accepts `hit`: one of the space-separated signatures
 * is the Standard Webhooks signature under that secret. The timestamp tolerance is left out
 * because this test moves the deployment's clock a day ahead.
 */
function accepts(secret: string, hit: Hit): boolean {
  const id = hit.headers["webhook-id"]!;
  const ts = Number(hit.headers["webhook-timestamp"]);
  const expected = new Webhook(secret).sign(id, new Date(ts * 1000), hit.body);
  return hit.headers["webhook-signature"]!.split(" ").includes(expected);
}

describe("POST /v1/webhook-endpoints/:id/rotate-secret", () => {
  let offsetMs = 0;
  const clock = { now: () => Date.now() + offsetMs };
  const hits: Hit[] = [];
  let server: http.Server;
  let base: string;
  let stack: Stack;
  before(async () => {
    server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => {
        body += c.toString("utf8");
      });
      req.on("end", () => {
        hits.push({
          path: req.url ?? "/",
          headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
          body,
        });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    stack = await startStack({
      clock,
      secretKeys: [randomBytes(32).toString("base64")],
      outbound: { allow_private_networks: true, retry_schedule_s: [0, 0.2] },
    });
  });
  after(async () => {
    await stack.close();
    await new Promise<void>((r) => server.close(() => r()));
  });

  /** Submits a task and waits for its task.created delivery at `path`. */
  const deliveredNext = async (path: string): Promise<Hit> => {
    const n = hits.filter((h) => h.path === path).length;
    const t = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "r" } } });
    assert.equal(t.status, 202);
    await waitFor(() => hits.filter((h) => h.path === path).length > n, 10_000, "a delivery");
    return hits.filter((h) => h.path === path).at(-1)!;
  };

  test("signs with the old and the new secret during the window, and with the new one only after it", async () => {
    const created = await stack.api("/v1/webhook-endpoints", {
      body: { url: `${base}/one`, events: ["task.created"] },
    });
    assert.equal(created.status, 201);
    const oldSecret = created.body.secret as string;
    assert.equal(created.body.previous_secret_expires_at, null);

    const client = new LonghaulClient({ baseUrl: stack.url, apiKey: stack.key });
    const rotated = await client.rotateWebhookEndpointSecret(created.body.id, { expirePreviousInS: 3600 });
    const newSecret = rotated.secret;
    assert.match(newSecret, /^whsec_/);
    assert.notEqual(newSecret, oldSecret);
    const window = Date.parse(rotated.previous_secret_expires_at!) - Date.parse(rotated.updated_at);
    assert.ok(window >= 3600_000 && window < 3600_000 + 5000, `window ${window} ms`);
    const listed = await stack.api(`/v1/webhook-endpoints/${created.body.id}`);
    assert.equal(listed.body.previous_secret_expires_at, rotated.previous_secret_expires_at);
    assert.equal(listed.body.secret, undefined, "a secret is shown only when made");

    const during = await deliveredNext("/one");
    assert.equal(during.headers["webhook-signature"]!.split(" ").length, 2);
    assert.ok(accepts(oldSecret, during), "a receiver still on the old secret accepts");
    assert.ok(accepts(newSecret, during), "a receiver already on the new secret accepts");
    // A real receiver (with its timestamp check) too, while the clock is still true.
    new Webhook(oldSecret).verify(during.body, during.headers);
    new Webhook(newSecret).verify(during.body, during.headers);

    offsetMs = 3600_000 + 1000;
    const afterWindow = await deliveredNext("/one");
    assert.equal(afterWindow.headers["webhook-signature"]!.split(" ").length, 1);
    assert.ok(!accepts(oldSecret, afterWindow), "the old secret no longer signs");
    assert.ok(accepts(newSecret, afterWindow));
    offsetMs = 0;
  });

  test("a second rotation inside the window keeps the first secret signing, each until its own expiry", async () => {
    const created = await stack.api("/v1/webhook-endpoints", {
      body: { url: `${base}/three`, events: ["task.created"] },
    });
    const id = created.body.id as string;
    const rotate = (body: unknown) => stack.api(`/v1/webhook-endpoints/${id}/rotate-secret`, { body });
    const first = await rotate({ expire_previous_in_s: 3600 });
    const second = await rotate({ expire_previous_in_s: 7200 });
    assert.equal(second.status, 200);
    const window = Date.parse(second.body.previous_secret_expires_at) - Date.parse(second.body.updated_at);
    assert.ok(window >= 7200_000 && window < 7200_000 + 5000, `the last window ends it: ${window} ms`);
    const secrets = [created.body.secret, first.body.secret, second.body.secret] as string[];

    const during = await deliveredNext("/three");
    assert.equal(during.headers["webhook-signature"]!.split(" ").length, 3);
    for (const secret of secrets) {
      assert.ok(accepts(secret, during), "every secret of the two windows signs");
      new Webhook(secret).verify(during.body, during.headers);
    }

    offsetMs = 3600_000 + 1000;
    const later = await deliveredNext("/three");
    assert.equal(later.headers["webhook-signature"]!.split(" ").length, 2);
    assert.ok(!accepts(secrets[0]!, later), "the first window has ended");
    assert.ok(accepts(secrets[1]!, later) && accepts(secrets[2]!, later));
    offsetMs = 0;
  });

  test("rotations past five earlier secrets still signing are refused with 409; expire_previous_in_s 0 stops them all", async () => {
    const created = await stack.api("/v1/webhook-endpoints", {
      body: { url: `${base}/four`, events: ["task.created"] },
    });
    const id = created.body.id as string;
    const rotate = (body: unknown) => stack.api(`/v1/webhook-endpoints/${id}/rotate-secret`, { body });
    for (let i = 0; i < 5; i++) assert.equal((await rotate({ expire_previous_in_s: 600 })).status, 200);
    const refused = await rotate({ expire_previous_in_s: 600 });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "LIMIT_REACHED");
    assert.match(refused.body.error.message, /expire_previous_in_s 0/);
    const stop = await rotate({ expire_previous_in_s: 0 });
    assert.equal(stop.status, 200);
    assert.equal(stop.body.previous_secret_expires_at, null);
    const hit = await deliveredNext("/four");
    assert.equal(hit.headers["webhook-signature"]!.split(" ").length, 1);
    assert.ok(accepts(stop.body.secret, hit));
  });

  test("expire_previous_in_s 0 drops the old secret at once; bad values and unknown ids are refused", async () => {
    const created = await stack.api("/v1/webhook-endpoints", {
      body: { url: `${base}/two`, events: ["task.created"] },
    });
    const id = created.body.id as string;
    const r = await stack.api(`/v1/webhook-endpoints/${id}/rotate-secret`, {
      body: { expire_previous_in_s: 0 },
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.previous_secret_expires_at, null);
    const hit = await deliveredNext("/two");
    assert.equal(hit.headers["webhook-signature"]!.split(" ").length, 1);
    assert.ok(accepts(r.body.secret, hit));
    assert.ok(!accepts(created.body.secret, hit));

    for (const body of [
      { expire_previous_in_s: -1 },
      { expire_previous_in_s: 1.5 },
      { expire_previous_in_s: "60" },
      [1],
    ]) {
      const bad = await stack.api(`/v1/webhook-endpoints/${id}/rotate-secret`, { body });
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body.error.code, "VALIDATION_FAILED");
    }
    const missing = await stack.api("/v1/webhook-endpoints/we_missing/rotate-secret", { body: {} });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, "WEBHOOK_ENDPOINT_NOT_FOUND");
    // No body at all is the default window of a day.
    const plain = await stack.api(`/v1/webhook-endpoints/${id}/rotate-secret`, { method: "POST" });
    assert.equal(plain.status, 200);
    const window = Date.parse(plain.body.previous_secret_expires_at) - Date.parse(plain.body.updated_at);
    assert.ok(window >= 24 * 3600_000 && window < 24 * 3600_000 + 5000, `window ${window} ms`);
  });
});
