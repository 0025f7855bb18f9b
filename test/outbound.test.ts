import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask } from "../src/core/task-type.ts";
import { answerExcerpt } from "../src/outbound/attempt.ts";
import { postPinned } from "../src/outbound/post-pinned.ts";
import { classifyAddress, vetTarget } from "../src/outbound/ssrf.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const twoSteps = defineTask("outbound.steps", async (_input: unknown, step) => {
  await step.run("a", () => 1);
  await step.run("b", () => 2);
  return { ok: true };
});

interface Hit {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
  status: number;
}

/** What an internal service behind a private target might answer: never for the tenant to read. */
const INTERNAL_ANSWER = "internal-only: db=10.0.0.5 user=admin";

/** A webhook receiver on loopback: each path answers as its handler says, and every request is kept. */
async function startReceiver() {
  const hits: Hit[] = [];
  const seen = new Map<string, number>();
  let down = true;
  const answer = (
    path: string,
    id: string,
  ): { status: number; headers?: Record<string, string>; body?: string } => {
    const n = (seen.get(`${path} ${id}`) ?? 0) + 1;
    seen.set(`${path} ${id}`, n);
    switch (path) {
      case "/flaky":
        return { status: n <= 2 ? 500 : 200 };
      case "/gone":
        return { status: 410, body: INTERNAL_ANSWER };
      case "/leaky":
        return { status: 503, body: INTERNAL_ANSWER };
      case "/down":
        return { status: down ? 503 : 204 };
      case "/redirect":
        return { status: 302, headers: { location: "/ok" } };
      default:
        return { status: 200 };
    }
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const path = req.url ?? "/";
      const a = answer(path, headers["webhook-id"] ?? "");
      hits.push({
        path,
        headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
        status: a.status,
      });
      res.writeHead(a.status, a.headers).end(a.body ?? "thanks");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    port,
    hits,
    on: (path: string) => hits.filter((h) => h.path === path),
    setDown: (v: boolean) => {
      down = v;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

async function createEndpoint(stack: Stack, body: unknown, key = stack.key) {
  const r = await stack.api("/v1/webhook-endpoints", { body, headers: { authorization: `Bearer ${key}` } });
  return r;
}

async function runTask(stack: Stack): Promise<string> {
  const r = await stack.api("/v1/tasks", { body: { type: "outbound.steps", input: {} } });
  assert.equal(r.status, 202);
  const id = r.body.task_id as string;
  await waitFor(async () => (await stack.api(`/v1/tasks/${id}`)).body.status === "succeeded", 10_000);
  return id;
}

async function deliveries(stack: Stack, endpointId: string, key = stack.key) {
  const r = await stack.api(`/v1/webhook-endpoints/${endpointId}/deliveries?limit=200`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return r;
}

const settled = (d: { state: string }) => d.state !== "pending";

describe("outbound webhooks (development policy: loopback allowed)", () => {
  let stack: Stack;
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver();
    stack = await startStack({
      taskTypes: [twoSteps],
      outbound: { retry_schedule_s: [0, 0.2, 0.4], allow_private_networks: true },
    });
  });
  after(async () => {
    await stack.close();
    await rx.close();
  });

  test("a receiver that fails twice gets each matching event delivered once, on the schedule, verifiably signed", async () => {
    const created = await createEndpoint(stack, { url: rx.url("/flaky"), events: ["task.*"] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { id, secret } = created.body;
    assert.match(id, /^we_/);
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    assert.equal(Buffer.from(secret.slice(6), "base64").length, 24);

    const taskId = await runTask(stack);
    const log = await waitFor(async () => {
      const r = await deliveries(stack, id);
      return r.body.data.length === 3 && r.body.data.every(settled) ? r.body.data : null;
    }, 10_000);
    assert.deepEqual(log.map((d: any) => d.event.type).sort(), [
      "task.created",
      "task.running",
      "task.succeeded",
    ]);
    for (const d of log) {
      assert.equal(d.state, "delivered");
      assert.equal(d.attempts, 3);
      assert.equal(d.last_status, 200);
      assert.equal(d.event.task_id, taskId);
      assert.equal(d.next_attempt_at, null);
    }

    const verifier = new Webhook(secret);
    const hits = rx.on("/flaky");
    const byId = new Map<string, Hit[]>();
    for (const h of hits)
      byId.set(h.headers["webhook-id"]!, [...(byId.get(h.headers["webhook-id"]!) ?? []), h]);
    assert.equal(byId.size, 3, "no event besides the three task.* ones");
    for (const [msgId, attempts] of byId) {
      assert.deepEqual(
        attempts.map((h) => h.status),
        [500, 500, 200],
      );
      for (const h of attempts) {
        const payload = verifier.verify(h.body, h.headers) as any;
        assert.equal(h.body, attempts[0]!.body, "every attempt sends the same bytes");
        assert.equal(msgId, `msg_${payload.data.seq}`);
        assert.equal(payload.data.task_id, taskId);
        assert.match(payload.type, /^task\./);
        assert.match(payload.timestamp, /Z$/);
      }
      // The schedule [0, 0.2, 0.4] s with ±10 % jitter: never early. The upper bound only shows
      // the retry is woken at its time, not found by a slow poll; it leaves room for a busy machine.
      const gap1 = attempts[1]!.at - attempts[0]!.at;
      const gap2 = attempts[2]!.at - attempts[1]!.at;
      assert.ok(gap1 >= 175 && gap1 < 3000, `second attempt ${gap1} ms after the first`);
      assert.ok(gap2 >= 355 && gap2 < 3000, `third attempt ${gap2} ms after the second`);
    }
    const succeeded = hits.find((h) => JSON.parse(h.body).type === "task.succeeded")!;
    assert.deepEqual(JSON.parse(succeeded.body).data.output, { ok: true });
  });

  test("a delivery is recorded in the transaction of its event: it exists as soon as the submit answers", async () => {
    const { body: ep } = await createEndpoint(stack, { url: rx.url("/ok?tx"), events: ["task.created"] });
    const r = await stack.api("/v1/tasks", { body: { type: "outbound.steps", input: {} } });
    assert.equal(r.status, 202);
    const now = await deliveries(stack, ep.id);
    assert.deepEqual(
      now.body.data.map((d: any) => [d.event.type, d.event.task_id]),
      [["task.created", r.body.task_id]],
    );
    await waitFor(async () => (await deliveries(stack, ep.id)).body.data[0].state === "delivered");
    // Past the retention period a delivered row is pruned from the log; a newer one is kept.
    assert.equal(await stack.store.pruneDeliveries(Date.now() - 60_000), 0);
    assert.ok((await stack.store.pruneDeliveries(Date.now() + 1000)) >= 1);
    assert.equal((await deliveries(stack, ep.id)).body.data.length, 0);
    await stack.api(`/v1/webhook-endpoints/${ep.id}`, { method: "DELETE" });
  });

  test("410 Gone disables the endpoint and stops its pending deliveries", async () => {
    const { body: ep } = await createEndpoint(stack, { url: rx.url("/gone") });
    await runTask(stack);
    // How many of the task's events were fanned out before the 410 disabled the endpoint
    // depends on timing; each is settled either way.
    const log = await waitFor(async () => {
      const r = await deliveries(stack, ep.id);
      return r.body.data.length >= 1 && r.body.data.every(settled) ? r.body.data : null;
    });
    const list = await stack.api("/v1/webhook-endpoints");
    const after410 = list.body.data.find((e: any) => e.id === ep.id);
    assert.equal(after410.status, "disabled");
    assert.match(after410.disabled_reason, /410/);
    assert.doesNotMatch(after410.disabled_reason, /internal-only/, "a private target's answer is not quoted");
    assert.ok(log.some((d: any) => d.state === "failed" && d.last_status === 410));
    assert.ok(
      log.every((d: any) => d.state === "canceled" || (d.state === "failed" && d.last_status === 410)),
    );
    // Attempts already under way when the 410 came may still have gone out; nothing after.
    const sent = rx.on("/gone").length;
    assert.ok(sent >= 1 && sent <= log.length, `${sent} POSTs for ${log.length} deliveries`);

    await runTask(stack);
    const again = await deliveries(stack, ep.id);
    assert.equal(again.body.data.length, log.length, "a disabled endpoint gets no new deliveries");
    assert.equal(rx.on("/gone").length, sent);
    const replay = await stack.api(`/v1/webhook-endpoints/${ep.id}/deliveries/${log[0].id}/replay`, {
      method: "POST",
    });
    assert.equal(replay.status, 409);
    assert.equal(replay.body.error.code, "DELIVERY_NOT_REPLAYABLE");
  });

  test("after the last slot of the schedule a delivery is dead; a replay delivers it", async () => {
    rx.setDown(true);
    const { body: ep } = await createEndpoint(stack, { url: rx.url("/down"), events: ["task.succeeded"] });
    const taskId = await runTask(stack);
    const [dead] = await waitFor(async () => {
      const r = await deliveries(stack, ep.id);
      return r.body.data.length === 1 && r.body.data[0].state === "dead" ? r.body.data : null;
    });
    assert.equal(dead.attempts, 3);
    assert.equal(dead.last_status, 503);
    assert.equal(dead.last_error.code, "HTTP_STATUS");
    assert.equal(dead.event.task_id, taskId);
    assert.equal(rx.on("/down").length, 3);

    rx.setDown(false);
    const replay = await stack.api(`/v1/webhook-endpoints/${ep.id}/deliveries/${dead.id}/replay`, {
      method: "POST",
    });
    assert.equal(replay.status, 202, JSON.stringify(replay.body));
    assert.equal(replay.body.state, "pending");
    const [done] = await waitFor(async () => {
      const r = await deliveries(stack, ep.id);
      return r.body.data[0].state === "delivered" ? r.body.data : null;
    });
    assert.equal(done.attempts, 4);
    assert.equal(done.last_status, 204);
    const hits = rx.on("/down");
    assert.equal(hits.length, 4);
    assert.equal(new Set(hits.map((h) => h.headers["webhook-id"])).size, 1, "a replay keeps the webhook-id");
    const again = await stack.api(`/v1/webhook-endpoints/${ep.id}/deliveries/${dead.id}/replay`, {
      method: "POST",
    });
    assert.equal(again.status, 409);
  });

  test("the delivery log of a private target keeps its status, never its answer", async () => {
    const { body: ep } = await createEndpoint(stack, { url: rx.url("/leaky"), events: ["task.succeeded"] });
    await runTask(stack);
    const [d] = await waitFor(async () => {
      const r = await deliveries(stack, ep.id);
      return r.body.data[0]?.last_error ? r.body.data : null;
    });
    assert.equal(d.last_status, 503);
    assert.equal(d.last_error.code, "HTTP_STATUS");
    assert.equal(d.last_error.message, `${rx.url("/leaky")} answered 503`);
    await stack.api(`/v1/webhook-endpoints/${ep.id}`, { method: "DELETE" });
  });

  test("redirects are not followed: a 3xx is a failed attempt", async () => {
    const okBefore = rx.on("/ok").length;
    const { body: ep } = await createEndpoint(stack, {
      url: rx.url("/redirect"),
      events: ["task.succeeded"],
    });
    await runTask(stack);
    const [d] = await waitFor(async () => {
      const r = await deliveries(stack, ep.id);
      return r.body.data[0]?.state === "dead" ? r.body.data : null;
    });
    assert.equal(d.last_status, 302);
    assert.equal(d.last_error.code, "REDIRECT_REFUSED");
    assert.equal(rx.on("/redirect").length, 3);
    assert.equal(rx.on("/ok").length, okBefore, "the Location was never requested");
  });

  test("link-local targets are refused even when private networks are allowed", async () => {
    for (const url of [
      "http://169.254.169.254/latest/meta-data/",
      "http://[fe80::1]/",
      "http://[::ffff:169.254.169.254]/",
    ]) {
      const r = await createEndpoint(stack, { url });
      assert.equal(r.status, 400, url);
      assert.equal(r.body.error.code, "TARGET_FORBIDDEN", url);
    }
    const local = await createEndpoint(stack, { url: rx.url("/ok") });
    assert.equal(local.status, 201);
    await stack.api(`/v1/webhook-endpoints/${local.body.id}`, { method: "DELETE" });
  });

  test("endpoints are the tenant's own: another key sees none of them and gets 404 for their ids", async () => {
    const otherKey = newApiKey();
    await stack.store.createTenant({ name: "other", keyHash: hashApiKey(otherKey) });
    const mine = (await createEndpoint(stack, { url: rx.url("/ok?who=mine"), events: ["task.succeeded"] }))
      .body;
    const theirs = (await createEndpoint(stack, { url: rx.url("/ok?who=theirs") }, otherKey)).body;
    const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

    const list = await stack.api("/v1/webhook-endpoints", as(otherKey));
    assert.deepEqual(
      list.body.data.map((e: any) => e.id),
      [theirs.id],
    );
    assert.equal(list.body.data[0].secret, undefined, "the secret is shown once, at creation");
    assert.equal((await deliveries(stack, mine.id, otherKey)).status, 404);
    assert.equal((await stack.api(`/v1/webhook-endpoints/${mine.id}`, as(otherKey))).status, 404);
    const del = await stack.api(`/v1/webhook-endpoints/${mine.id}`, { method: "DELETE", ...as(otherKey) });
    assert.equal(del.status, 404);
    assert.equal(del.body.error.code, "WEBHOOK_ENDPOINT_NOT_FOUND");

    const taskId = await runTask(stack);
    await waitFor(async () => (await deliveries(stack, mine.id)).body.data[0]?.state === "delivered");
    assert.equal((await deliveries(stack, theirs.id, otherKey)).body.data.length, 0);
    const replay = await stack.api(
      `/v1/webhook-endpoints/${mine.id}/deliveries/${(await deliveries(stack, mine.id)).body.data[0].id}/replay`,
      { method: "POST", ...as(otherKey) },
    );
    assert.equal(replay.status, 404);
    assert.ok(rx.hits.every((h) => h.path !== "/ok?who=theirs"));
    assert.ok(rx.hits.some((h) => h.path === "/ok?who=mine" && JSON.parse(h.body).data.task_id === taskId));

    const gone = await stack.api(`/v1/webhook-endpoints/${mine.id}`, { method: "DELETE" });
    assert.equal(gone.status, 204);
    assert.equal((await deliveries(stack, mine.id)).status, 404);
    assert.ok(!(await stack.api("/v1/webhook-endpoints")).body.data.some((e: any) => e.id === mine.id));
  });

  test("malformed endpoints are refused with clear errors", async () => {
    const cases: [unknown, string][] = [
      [{}, "VALIDATION_FAILED"],
      [{ url: "not a url" }, "VALIDATION_FAILED"],
      [{ url: "https://user:pw@example.com/" }, "VALIDATION_FAILED"],
      [{ url: rx.url("/ok"), events: "task.*" }, "VALIDATION_FAILED"],
      [{ url: rx.url("/ok"), events: ["task.*", "Nope!"] }, "VALIDATION_FAILED"],
      [{ url: rx.url("/ok"), events: [] }, "VALIDATION_FAILED"],
    ];
    for (const [body, code] of cases) {
      const r = await createEndpoint(stack, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.code, code);
    }
  });
});

describe("outbound webhooks (default policy: public targets only)", () => {
  let stack: Stack;
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver();
    stack = await startStack({ taskTypes: [twoSteps], outbound: { retry_schedule_s: [0, 0.2, 0.4] } });
  });
  after(async () => {
    await stack.close();
    await rx.close();
  });

  test("private, loopback, CGNAT, link-local and non-http targets are refused with TARGET_FORBIDDEN", async () => {
    for (const url of [
      "http://127.0.0.1:8080/hook",
      "http://10.0.0.1/hook",
      "http://100.64.0.1/hook",
      "http://169.254.169.254/latest/meta-data/",
      "http://[::ffff:127.0.0.1]/hook",
      "http://[::1]/hook",
      "http://localhost/hook",
      "http://0.0.0.0/",
      "http://2130706433/",
      "ftp://example.com/hook",
    ]) {
      const r = await createEndpoint(stack, { url });
      assert.equal(r.status, 400, url);
      assert.equal(r.body.error.code, "TARGET_FORBIDDEN", url);
      assert.match(r.body.error.message, /./);
    }
  });

  test("a stored endpoint that points inside is refused at delivery time, without retries", async () => {
    const ep = await stack.store.createWebhookEndpoint({
      tenantId: stack.tenantId,
      url: rx.url("/ok"),
      events: ["task.succeeded"],
      secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    });
    await runTask(stack);
    const [d] = await waitFor(async () => {
      const r = await deliveries(stack, ep.id);
      return r.body.data[0] && settled(r.body.data[0]) ? r.body.data : null;
    });
    assert.equal(d.state, "failed");
    assert.equal(d.attempts, 1);
    assert.equal(d.last_status, null);
    assert.equal(d.last_error.code, "TARGET_FORBIDDEN");
    assert.equal(rx.hits.length, 0);
  });
});

test("the delivery log quotes an answer only from a public address", () => {
  const answer = `  ${"x".repeat(300)}  `;
  assert.equal(answerExcerpt("93.184.216.34", answer), "x".repeat(200));
  assert.equal(answerExcerpt("2606:4700:4700::1111", "rate limited"), "rate limited");
  for (const address of [
    "127.0.0.1",
    "10.0.0.5",
    "192.168.1.2",
    "100.64.0.1",
    "::1",
    "fd00::1",
    "::ffff:10.0.0.5",
    "198.18.0.1",
  ]) {
    assert.equal(answerExcerpt(address, answer), "", address);
  }
});

describe("the SSRF guard", () => {
  test("classifies addresses, including IPv4 inside IPv6", () => {
    const cases: [string, string][] = [
      ["8.8.8.8", "public"],
      ["172.32.0.1", "public"],
      ["2606:4700:4700::1111", "public"],
      ["127.0.0.1", "private"],
      ["10.1.2.3", "private"],
      ["172.16.0.1", "private"],
      ["172.31.255.255", "private"],
      ["192.168.1.1", "private"],
      ["100.64.0.1", "private"],
      ["100.127.255.255", "private"],
      ["0.0.0.0", "private"],
      ["::", "private"],
      ["::1", "private"],
      ["fc00::1", "private"],
      ["fd12:3456::1", "private"],
      ["::ffff:127.0.0.1", "private"],
      ["::ffff:7f00:1", "private"],
      ["::ffff:10.0.0.1", "private"],
      ["64:ff9b::a00:1", "private"],
      ["169.254.169.254", "link-local"],
      ["fe80::1", "link-local"],
      ["fe80::1%eth0", "link-local"],
      ["::ffff:169.254.169.254", "link-local"],
      ["64:ff9b::a9fe:a9fe", "link-local"],
      ["2002:a9fe:a9fe::1", "link-local"],
      ["224.0.0.1", "reserved"],
      ["255.255.255.255", "reserved"],
      ["ff02::1", "reserved"],
      ["::ffff:8.8.8.8", "public"],
    ];
    for (const [ip, want] of cases) assert.equal(classifyAddress(ip), want, ip);
  });

  test("follows the IANA special-purpose registries: each class of range, and public addresses still pass", () => {
    const cases: [string, string][] = [
      // Documentation and benchmarking ranges.
      ["192.0.2.10", "reserved"],
      ["198.51.100.7", "reserved"],
      ["203.0.113.255", "reserved"],
      ["2001:db8::1", "reserved"],
      ["2001:db8:ffff::1", "reserved"],
      ["3fff::1", "reserved"],
      ["198.18.0.1", "private"],
      ["198.19.255.254", "private"],
      ["2001:2::1", "private"],
      // The rest of the IPv4 registry.
      ["192.0.0.8", "reserved"],
      ["192.0.0.170", "reserved"],
      ["192.88.99.1", "reserved"],
      ["240.1.2.3", "reserved"],
      ["0.1.2.3", "private"],
      // Teredo tunnels to a client behind a NAT: never.
      ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"],
      ["2001::1", "reserved"],
      // 6to4 is what the IPv4 address inside is.
      ["2002:c0a8:101::1", "private"],
      ["2002:0a00:0001::", "private"],
      ["2002:7f00:1::1", "private"],
      ["2002:cb00:7101::1", "reserved"],
      ["2002:808:808::1", "public"],
      // NAT64 (well-known and local-use prefixes) is what it translates to.
      ["64:ff9b::c0a8:1", "private"],
      ["64:ff9b::127.0.0.1", "private"],
      ["64:ff9b::192.0.2.1", "reserved"],
      ["64:ff9b::8.8.8.8", "public"],
      ["64:ff9b:1::a00:1", "private"],
      // IPv4-mapped and -compatible addresses, in both spellings.
      ["::ffff:192.168.0.1", "private"],
      ["::ffff:c0a8:1", "private"],
      ["::ffff:198.51.100.1", "reserved"],
      ["::ffff:a9fe:a9fe", "link-local"],
      ["::10.0.0.1", "private"],
      ["::ffff:1.1.1.1", "public"],
      // Other IPv6 blocks no webhook lives at, and what lies outside global unicast.
      ["100::1", "reserved"],
      ["5f00::1", "reserved"],
      ["2001:10::1", "reserved"],
      ["4000::1", "reserved"],
      ["fec0::1", "private"],
      // Globally reachable blocks the registries list stay public, even inside a refused one.
      ["192.31.196.1", "public"],
      ["192.0.0.9", "public"],
      ["2001:4:112::1", "public"],
      ["2001:3::1", "public"],
      ["2620:4f:8000::1", "public"],
      // Ordinary public addresses.
      ["1.1.1.1", "public"],
      ["93.184.216.34", "public"],
      ["192.0.3.1", "public"],
      ["203.0.114.1", "public"],
      ["198.20.0.1", "public"],
      ["2001:4860:4860::8888", "public"],
      ["2a00:1450:4001:80b::200e", "public"],
      ["2001:db9::1", "public"],
    ];
    for (const [ip, want] of cases) assert.equal(classifyAddress(ip), want, ip);
  });

  test("a documentation or Teredo target is refused even when private networks are allowed", async () => {
    for (const address of [
      "192.0.2.1",
      "2001:db8::5",
      "2001:0:4136:e378:8000:63bf:3fff:fdd2",
      "2002:c000:201::1",
    ]) {
      const resolve = async () => [{ address, family: address.includes(":") ? 6 : 4 }];
      await assert.rejects(
        vetTarget("https://docs.example/hook", { allowPrivateNetworks: true }, resolve),
        (e: any) => e.code === "TARGET_FORBIDDEN" && /reserved address/.test(e.message),
        address,
      );
    }
    const bench = async () => [{ address: "198.18.0.9", family: 4 }];
    await assert.rejects(vetTarget("https://lab.example/hook", { allowPrivateNetworks: false }, bench), {
      code: "TARGET_FORBIDDEN",
    });
    assert.equal(
      (await vetTarget("https://lab.example/hook", { allowPrivateNetworks: true }, bench)).address,
      "198.18.0.9",
    );
  });

  test("a name is refused if any of its addresses is forbidden", async () => {
    const resolve = async () => [
      { address: "93.184.216.34", family: 4 },
      { address: "10.0.0.7", family: 4 },
    ];
    await assert.rejects(
      vetTarget("https://mixed.example/hook", { allowPrivateNetworks: false }, resolve),
      (e: any) => e.code === "TARGET_FORBIDDEN" && /10\.0\.0\.7/.test(e.message),
    );
    const ok = await vetTarget("https://mixed.example/hook", { allowPrivateNetworks: true }, resolve);
    assert.equal(ok.address, "93.184.216.34");
  });

  test("the request goes to the vetted address, never to a second DNS answer, and keeps the name as Host", async () => {
    const rx = await startReceiver();
    try {
      const r = await postPinned(
        {
          url: new URL(`http://rebinding.invalid:${rx.port}/ok`),
          host: "rebinding.invalid",
          address: "127.0.0.1",
          family: 4,
        },
        { headers: { "content-type": "application/json" }, body: "{}", timeoutMs: 2000 },
      );
      assert.equal(r.status, 200);
      assert.equal(rx.hits[0]?.headers.host, `rebinding.invalid:${rx.port}`);
    } finally {
      await rx.close();
    }
  });
});
