import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { signSlack } from "../src/ingress/slack.ts";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";
import { captureLog } from "./helpers.ts";
import { HMAC_SECRET, type IngressStack, rawRequest, startIngressStack } from "./ingress-stack.ts";
import { SIM_SECRET, type Stack, startStack } from "./stack.ts";

const nowS = () => Math.floor(Date.now() / 1000);

async function post(url: string, headers: Record<string, string>, body: string | Buffer) {
  const res = await fetch(url, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : new Uint8Array(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

describe("webhook ingress over HTTP, on the whole stack", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack.close());

  const signed = (id: string, body: string, at = nowS(), secret = SIM_SECRET) => ({
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(at),
    "webhook-signature": signStandardWebhook({ id, timestampS: at, body, secret }),
  });
  const rows = (eventId: string) =>
    (
      stack.store.db.prepare("SELECT count(*) AS n FROM inbox_events WHERE event_id = ?").get(eventId) as {
        n: number;
      }
    ).n;
  const hook = (source = "sim") => `${stack.url}/hooks/${source}`;
  const body = (id: string) => JSON.stringify({ id, type: "job.running", data: { job_id: "job_none" } });

  test("an unknown source is 404", async () => {
    const r = await post(hook("nope"), signed("evt_404", body("evt_404")), body("evt_404"));
    assert.equal(r.status, 404);
    assert.equal(r.body.error.code, "SOURCE_NOT_FOUND");
  });

  test("a missing, forged or stale signature is 401 with its own code, and records nothing", async () => {
    const b = body("evt_401");
    const cases: [Record<string, string>, string][] = [
      [{ "content-type": "application/json" }, "SIGNATURE_MISSING"],
      [signed("evt_401", b, nowS(), "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "SIGNATURE_INVALID"],
      [signed("evt_401", b, nowS() - 3600), "TIMESTAMP_OUT_OF_TOLERANCE"],
      [{ ...signed("evt_401", b), "webhook-timestamp": "tomorrow" }, "SIGNATURE_INVALID"],
    ];
    for (const [headers, code] of cases) {
      const r = await post(hook(), headers, b);
      assert.equal(r.status, 401, code);
      assert.equal(r.body.error.code, code);
    }
    assert.equal(rows("evt_401"), 0);
  });

  test("a valid signature on a body that is not JSON is 400 and records nothing", async () => {
    const r = await post(hook(), signed("evt_400", "this is not json"), "this is not json");
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, "INVALID_JSON");
    assert.equal(rows("evt_400"), 0);
  });

  test("a duplicate delivery is answered 200 duplicate and kept once", async () => {
    const b = body("evt_dup");
    const headers = signed("evt_dup", b);
    assert.deepEqual((await post(hook(), headers, b)).body, { received: true, duplicate: false });
    const again = await post(hook(), headers, b);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, { received: true, duplicate: true });
    assert.equal(rows("evt_dup"), 1);
  });

  test("a Content-Length over the source's limit is 413 before any of the body is sent", async () => {
    const head = `POST /hooks/sim HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${2 * 1024 * 1024}`;
    assert.equal(await rawRequest(stack.url, head), 413);
  });

  test("an unknown source is refused before its body is sent", async () => {
    const head =
      "POST /hooks/nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100";
    assert.equal(await rawRequest(stack.url, head), 404);
  });

  test("a chunked body that grows past the limit is 413 before it ends", async () => {
    const head =
      "POST /hooks/sim HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked";
    const piece = Buffer.alloc(64 * 1024, "a");
    const chunk = Buffer.concat([
      Buffer.from(`${piece.length.toString(16)}\r\n`),
      piece,
      Buffer.from("\r\n"),
    ]);
    // 17 chunks of 64 KiB pass the 1 MiB limit; the terminating chunk is never sent.
    assert.equal(await rawRequest(stack.url, head, Array(17).fill(chunk)), 413);
  });

  test("the path answered ahead of the router and the router's route answer alike", async () => {
    // `/hooks/sim` is answered by the node:http handler (src/http/hook-ingress.ts); `/hooks/%73im`
    // names the same source but goes through the router, as any path with `%` in it does.
    // node:http rather than fetch, which would add a content type of its own.
    const answer = (url: string, headers: Record<string, string>, b: string) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const req = http.request(url, { method: "POST", headers }, (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => {
            text += c;
          });
          res.on("end", () =>
            resolve({
              status: res.statusCode,
              body: text,
              type: res.headers["content-type"],
              retryAfter: res.headers["retry-after"],
              limit: res.headers["x-ratelimit-limit"],
              requestId: res.headers["x-request-id"],
            }),
          );
        });
        req.on("error", reject);
        req.end(b);
      });
    const routed = `${stack.url}/hooks/%73im`;
    const b = (id: string) => body(id);
    const cases: [string, (id: string) => Record<string, string>, (id: string) => string][] = [
      ["accepted", (id) => signed(id, b(id)), b],
      ["forged", (id) => signed(id, b(id), nowS(), "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), b],
      ["unsigned", () => ({ "content-type": "application/json" }), b],
      ["not JSON", (id) => signed(id, "not json"), () => "not json"],
      [
        "no content type",
        (id) => {
          const { "content-type": _, ...rest } = signed(id, b(id));
          return rest;
        },
        b,
      ],
      ["text/plain", (id) => ({ ...signed(id, b(id)), "content-type": "text/plain" }), b],
    ];
    for (const [what, headers, text] of cases) {
      // The same request id on both, so their answers (which carry it) can be compared whole.
      const id = { "x-request-id": `rid-${what.replaceAll(" ", "-")}` };
      const fast = await answer(hook(), { ...headers(`evt_fast_${what}`), ...id }, text(`evt_fast_${what}`));
      const slow = await answer(routed, { ...headers(`evt_slow_${what}`), ...id }, text(`evt_slow_${what}`));
      assert.deepEqual(fast, slow, what);
      assert.equal(fast.requestId, id["x-request-id"], what);
    }
    // A delivery recorded through one path is a duplicate through the other.
    const dup = b("evt_fast_accepted");
    const again = await answer(routed, signed("evt_fast_accepted", dup), dup);
    assert.equal(again.body, '{"received":true,"duplicate":true}');
    assert.equal(rows("evt_fast_accepted"), 1);
    assert.equal(rows("evt_slow_accepted"), 1);
  });

  test("a webhook answered ahead of the router is logged as the router logs a request", async () => {
    const { lines, log: logger } = captureLog();
    const logged = await startStack({ logger });
    try {
      const b = body("evt_logged");
      const r = await post(`${logged.url}/hooks/sim`, signed("evt_logged", b), b);
      assert.equal(r.status, 200);
      const done = lines.find(
        (l) => l.msg === "request completed" && (l.req as { url?: string })?.url === "/hooks/sim",
      );
      assert.ok(done, JSON.stringify(lines.map((l) => l.msg)));
      assert.deepEqual(done.res, { statusCode: 200 });
      assert.equal((done.req as { method: string }).method, "POST");
      assert.equal(typeof done.responseTime, "number");
      assert.equal(JSON.stringify(done).includes("webhook-signature"), false, "no header is logged");
    } finally {
      await logged.close();
    }
  });
  test("a store failure is a 500 INTERNAL, logged with its error, ahead of the router and through it", async () => {
    const { lines, log: logger } = captureLog();
    const failing = await startStack({ logger });
    try {
      failing.store.recordEvent = async () => {
        throw new Error("the disk caught fire");
      };
      for (const path of ["/hooks/sim", "/hooks/%73im"]) {
        const b = body(`evt_500${path.length}`);
        const r = await post(`${failing.url}${path}`, signed(`evt_500${path.length}`, b), b);
        assert.equal(r.status, 500, path);
        assert.equal(r.body.error.code, "INTERNAL", path);
        assert.equal(JSON.stringify(r.body).includes("caught fire"), false, "the cause stays in the log");
      }
      const errors = lines.filter((l) => l.level === 50);
      assert.equal(errors.length, 2, JSON.stringify(lines.map((l) => l.msg)));
      for (const e of errors) {
        assert.equal(e.msg, "unexpected error");
        assert.equal((e.err as { message: string }).message, "the disk caught fire");
      }
    } finally {
      await failing.close();
    }
  });
});

describe("webhook ingress over HTTP, every scheme", () => {
  let stack: IngressStack;
  /** What the server logged, one parsed JSON line each. */
  const { lines: logged, log: logger } = captureLog();
  before(async () => {
    stack = await startIngressStack({
      logger,
      tinyLimit: 1024,
      extra: {
        "jwt-down": {
          provider: "sim",
          scheme: "jwt",
          jwks_url: "http://127.0.0.1:9/jwks",
          issuer: "https://sender.example",
          audience: "https://hooks.example/hooks/jwt",
        },
      },
    });
  });
  after(() => stack.close());

  const send = async (source: string, body: Buffer, sign = source) =>
    post(
      `${stack.url}/hooks/${source}`,
      { "content-type": "application/json", ...(await stack.senders[sign]!(body, nowS())) },
      body,
    );
  const eventIds = (source: string) =>
    (
      stack.store.db.prepare("SELECT event_id FROM inbox_events WHERE source = ?").all(source) as {
        event_id: string;
      }[]
    ).map((r) => r.event_id);

  test("each scheme records a signed delivery once, under the event id it carries", async () => {
    const body = Buffer.from('{"id":"evt_42","event_id":"Ev42","type":"job.running","data":{"job_id":"j"}}');
    for (const scheme of ["standard-webhooks", "stripe", "github", "goog-hmac", "slack", "jwt"]) {
      assert.deepEqual((await send(scheme, body)).body, { received: true, duplicate: false }, scheme);
      assert.deepEqual((await send(scheme, body)).body, { received: true, duplicate: true }, scheme);
      assert.equal(stack.inboxCount(scheme), 1, scheme);
    }
    assert.match(eventIds("standard-webhooks")[0]!, /^msg_/);
    assert.deepEqual(eventIds("stripe"), ["evt_42"]);
    assert.deepEqual(eventIds("goog-hmac"), ["evt_42"]);
    assert.deepEqual(eventIds("slack"), ["Ev42"]);
    assert.match(
      eventIds("github")[0]!,
      /^sha256:[0-9a-f]{64}$/,
      "GitHub deliveries are deduped on the body",
    );
    assert.match(
      eventIds("jwt")[0]!,
      /^sha256:[0-9a-f]{64}$/,
      "a token without jti falls back to the body hash",
    );
  });

  test("a GitHub delivery replayed under another X-GitHub-Delivery, or none, is a duplicate recorded and applied once", async () => {
    const body = Buffer.from('{"action":"completed","workflow_run":{"id":30433642}}');
    const signed = await stack.senders.github!(body, nowS());
    const deliver = (delivery: string | undefined) => {
      const headers: Record<string, string> = { "content-type": "application/json", ...signed };
      if (delivery === undefined) delete headers["x-github-delivery"];
      else headers["x-github-delivery"] = delivery;
      return post(`${stack.url}/hooks/github`, headers, body);
    };
    assert.deepEqual((await deliver("72d3162e-cc78-11e3-81ab-4c9367dc0958")).body, {
      received: true,
      duplicate: false,
    });
    for (const replay of ["a-new-delivery-id", undefined]) {
      const r = await deliver(replay);
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, { received: true, duplicate: true }, String(replay));
    }
    const rows = stack.store.db
      .prepare("SELECT id FROM inbox_events WHERE source = 'github' AND event_id = ?")
      .all(`sha256:${createHash("sha256").update(body).digest("hex")}`) as { id: string }[];
    assert.equal(rows.length, 1, "recorded once");
    const applies = stack.store.db
      .prepare("SELECT count(*) AS n FROM work_items WHERE kind = 'apply_event' AND payload LIKE ?")
      .get(`%${rows[0]!.id}%`) as { n: number };
    assert.equal(applies.n, 1, "applied once");
    const deliveries = logged
      .filter(
        (l) =>
          l.source === "github" && l.eventId === `sha256:${createHash("sha256").update(body).digest("hex")}`,
      )
      .map((l) => [l.deliveryId, l.duplicate]);
    assert.deepEqual(
      deliveries,
      [
        ["72d3162e-cc78-11e3-81ab-4c9367dc0958", false],
        ["a-new-delivery-id", true],
      ],
      "each delivery id is logged next to the event id it was deduped on",
    );
  });

  test("a jwt token bound to one body is refused with another, and records nothing", async () => {
    const signedFor = Buffer.from('{"id":"evt_bound","type":"job.running","data":{"job_id":"j"}}');
    const other = Buffer.from('{"id":"evt_swapped","type":"job.succeeded","data":{"job_id":"j"}}');
    const headers = { "content-type": "application/json", ...(await stack.senders.jwt!(signedFor, nowS())) };
    const before = stack.inboxCount("jwt");
    const r = await post(`${stack.url}/hooks/jwt`, headers, other);
    assert.equal(r.status, 401);
    assert.equal(r.body.error.code, "SIGNATURE_INVALID");
    assert.match(r.body.error.message, /body_sha256/);
    assert.equal(stack.inboxCount("jwt"), before);
  });

  test("a Slack interactivity post, form-encoded and signed v0 over its raw bytes, records the payload's JSON, ahead of the router and through it", async () => {
    // What Slack sends when a button is pressed: payload=<url-encoded JSON>, signed as sent.
    const secret = HMAC_SECRET;
    const form = (action: string) =>
      `payload=${encodeURIComponent(
        JSON.stringify({
          type: "block_actions",
          trigger_id: `13345224609.${action}`,
          actions: [{ action_id: action }],
        }),
      )}`;
    const slackPost = (path: string, text: string, over: Record<string, string> = {}) => {
      const at = nowS();
      return post(
        `${stack.url}${path}`,
        {
          "content-type": "application/x-www-form-urlencoded",
          "x-slack-request-timestamp": String(at),
          "x-slack-signature": signSlack({ timestampS: at, body: text, secret }),
          ...over,
        },
        text,
      );
    };
    const recorded = (text: string) =>
      stack.store.db
        .prepare("SELECT body FROM inbox_events WHERE source = 'slack' AND event_id = ?")
        .get(`sha256:${createHash("sha256").update(text).digest("hex")}`) as { body: Uint8Array } | undefined;
    for (const [path, action] of [
      ["/hooks/slack", "approve"],
      ["/hooks/%73lack", "reject"],
    ] as const) {
      const text = form(action);
      const r = await slackPost(path, text);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body, { received: true, duplicate: false }, path);
      assert.deepEqual((await slackPost(path, text)).body, { received: true, duplicate: true }, path);
      const row = recorded(text);
      assert.ok(row, path);
      assert.deepEqual(JSON.parse(Buffer.from(row.body).toString("utf8")).actions, [{ action_id: action }]);
    }
    const before = stack.inboxCount("slack");
    // Signed over other bytes, or a form without a payload: refused, nothing recorded.
    const forged = await slackPost("/hooks/slack", form("forged"), {
      "x-slack-signature": signSlack({ timestampS: nowS(), body: form("other"), secret }),
    });
    assert.equal(forged.status, 401);
    const command = await slackPost("/hooks/slack", "command=%2Fdeploy&text=now");
    assert.equal(command.status, 400);
    assert.equal(command.body.error.code, "INVALID_JSON");
    assert.match(command.body.error.message, /payload/);
    assert.equal(stack.inboxCount("slack"), before);
  });

  test("a request signed for one scheme is refused by every other", async () => {
    const body = Buffer.from('{"id":"evt_cross"}');
    const before = stack.inboxCount();
    for (const signer of ["stripe", "github", "goog-hmac", "slack", "jwt"]) {
      for (const source of ["standard-webhooks", "stripe", "github", "goog-hmac", "slack", "jwt"]) {
        if (signer === source) continue;
        assert.equal((await send(source, body, signer)).status, 401, `${signer} → ${source}`);
      }
    }
    assert.equal(stack.inboxCount(), before);
  });

  test("a body exactly at the limit is accepted; one byte over is 413, declared or chunked", async () => {
    const exact = Buffer.from(JSON.stringify({ pad: "x".repeat(1024 - 10) }));
    assert.equal(exact.length, 1024);
    assert.equal((await send("tiny", exact)).status, 200);
    const over = Buffer.from(JSON.stringify({ pad: "x".repeat(1024 - 9) }));
    assert.equal((await send("tiny", over)).status, 413);
    const head =
      "POST /hooks/tiny HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked";
    const chunk = (n: number) => `${n.toString(16)}\r\n${"a".repeat(n)}\r\n`;
    assert.equal(await rawRequest(stack.url, head, [chunk(1000), chunk(25)]), 413);
    assert.equal(stack.inboxCount("tiny"), 1);
  });

  test("headers no client should send never cause a 5xx", async () => {
    const head = (extra: string) =>
      `POST /hooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n${extra}`;
    const cases: [string, number][] = [
      ["Stripe-Signature: t=\xff\xfe,v1=\x80\x81", 401],
      [`Stripe-Signature: t=${nowS()},v1=${"é".repeat(64)}`, 401],
      [`Stripe-Signature: ${"t=1,".repeat(2000)}`, 401],
      [`X-Filler: ${"a".repeat(20_000)}`, 431],
    ];
    for (const [extra, status] of cases) {
      assert.equal(await rawRequest(stack.url, head(extra), ["{}"]), status, extra.slice(0, 40));
    }
    const jwtHead =
      "POST /hooks/jwt HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nAuthorization: Bearer \xff.\xfe.\x80";
    assert.equal(await rawRequest(stack.url, jwtHead, ["{}"]), 401);
  });

  test("a JWKS that cannot be reached is 503, so the sender retries, and records nothing", async () => {
    const r = await send("jwt-down", Buffer.from('{"id":"e"}'), "jwt");
    assert.equal(r.status, 503);
    assert.equal(r.body.error.code, "JWKS_UNAVAILABLE");
    assert.equal(stack.inboxCount("jwt-down"), 0);
  });
});
