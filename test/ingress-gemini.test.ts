import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { type CryptoKey, type JWTPayload, SignJWT } from "jose";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";
import { type IngressStack, startIngressStack } from "./ingress-stack.ts";
import { startJwksServer } from "./jwks-server.ts";

// Stand-ins for what Gemini's per-request webhooks carry: an RS256 token from Google's key set,
// in webhook-signature, next to webhook-id and webhook-timestamp. The key pair is made here and
// its JWKS served over loopback, as Google serves its own.
const ISSUER = "https://generativelanguage.googleapis.com";
const AUDIENCE = "https://hooks.example.com/hooks/gemini";
const WHSEC = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

const nowS = () => Math.floor(Date.now() / 1000);
const sha256 = (body: Buffer) => createHash("sha256").update(body).digest("hex");
const envelope = (id: string) =>
  Buffer.from(JSON.stringify({ type: "batch.succeeded", data: { id: `batches/${id}` } }));

let privateKey: CryptoKey;
let closeJwks: () => Promise<void> = async () => {};
let stack: IngressStack;
let tokens = 0;

async function googleToken(claims: JWTPayload = {}): Promise<string> {
  tokens++;
  return new SignJWT({
    iss: ISSUER,
    aud: AUDIENCE,
    iat: nowS(),
    exp: nowS() + 3600,
    jti: `t${tokens}`,
    ...claims,
  })
    .setProtectedHeader({ alg: "RS256", kid: "google-1", typ: "JWT" })
    .sign(privateKey);
}

async function post(source: string, headers: Record<string, string>, body: Buffer) {
  const res = await fetch(`${stack.url}/hooks/${source}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: new Uint8Array(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const eventIds = (source: string) =>
  (
    stack.store.db
      .prepare("SELECT event_id FROM inbox_events WHERE source = ? ORDER BY received_at")
      .all(source) as {
      event_id: string;
    }[]
  ).map((r) => r.event_id);

before(async () => {
  const keys = await startJwksServer("/oauth2/v3/certs");
  privateKey = keys.privateKey;
  closeJwks = keys.close;
  const jwksUrl = keys.jwksUrl;
  stack = await startIngressStack({
    extra: {
      // A dynamic (per-request) source, as the README configures it.
      gemini: {
        provider: "gemini",
        scheme: "jwt",
        jwks_url: jwksUrl,
        issuer: ISSUER,
        audience: AUDIENCE,
        body_hash_claim: false,
      },
      // The same, reading its token from webhook-signature only.
      "gemini-signature": {
        provider: "gemini",
        scheme: "jwt",
        jwks_url: jwksUrl,
        issuer: ISSUER,
        audience: AUDIENCE,
        token_header: "webhook-signature",
      },
      // A static (project) source: Standard Webhooks HMAC with the console's whsec_ secret.
      "gemini-static": { provider: "gemini", scheme: "standard-webhooks", secrets: [WHSEC] },
    },
  });
});

after(async () => {
  await stack.close();
  await closeJwks();
});

describe("Gemini per-request (dynamic) webhooks", () => {
  const tokenId = (token: string) => `jwt:${createHash("sha256").update(token).digest("hex")}`;
  const deliver = async (token: string, webhookId: string, body: Buffer, source = "gemini") =>
    post(
      source,
      { "webhook-id": webhookId, "webhook-timestamp": String(nowS()), "webhook-signature": token },
      body,
    );
  /** What a captured token is replayed with: an operation that claims to be done, with chosen output. */
  const forged = (id: string) =>
    Buffer.from(JSON.stringify({ name: `batches/${id}`, done: true, response: { forged: true } }));

  test("a delivery with the JWT in webhook-signature is recorded under the token's SHA-256, not its unsigned webhook-id", async () => {
    const token = await googleToken();
    const r = await deliver(token, "wh_b1", envelope("b1"));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { received: true, duplicate: false });
    assert.ok(eventIds("gemini").includes(tokenId(token)));
    assert.ok(!eventIds("gemini").includes("wh_b1"));
  });

  test("the same token and body again are a duplicate, whatever webhook-id or prefix comes with them", async () => {
    const body = envelope("b2");
    const token = await googleToken();
    assert.deepEqual((await deliver(token, "wh_b2", body)).body, { received: true, duplicate: false });
    for (const [webhookId, signature] of [
      ["wh_b2", token],
      ["wh_b2_chosen", token],
      ["wh_b2_other", `v1,${token}`],
    ]) {
      const again = await deliver(signature!, webhookId!, body);
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, { received: true, duplicate: true }, webhookId);
    }
    assert.equal(eventIds("gemini").filter((id) => id === tokenId(token)).length, 1);
    assert.ok(!eventIds("gemini").some((id) => id.startsWith("wh_b2")));
  });

  test("a captured token replayed with another body is refused, under its webhook-id or another, and nothing is recorded", async () => {
    const token = await googleToken();
    assert.equal((await deliver(token, "wh_b3", envelope("b3"))).status, 200);
    const before = stack.inboxCount("gemini");
    for (const [webhookId, body] of [
      ["wh_b3", forged("b3")],
      ["wh_b3_chosen", forged("b3")],
      ["wh_b3_chosen", envelope("b3-other")],
    ] as const) {
      const replay = await deliver(token, webhookId, body);
      assert.equal(replay.status, 401, webhookId);
      const error = replay.body.error as { code: string; message: string };
      assert.equal(error.code, "TOKEN_REPLAYED");
      assert.match(error.message, /fresh token/);
    }
    assert.equal(stack.inboxCount("gemini"), before);
  });

  test("a retry under the same webhook-id with a fresh token is another event (applying it twice is harmless)", async () => {
    const body = envelope("b4");
    const first = await deliver(await googleToken(), "wh_b4", body);
    const retry = await deliver(`v1,${await googleToken()}`, "wh_b4", body);
    assert.deepEqual(first.body, { received: true, duplicate: false });
    assert.deepEqual(retry.body, { received: true, duplicate: false });
  });

  test("a Pub/Sub token in Authorization is not bound to one body: Pub/Sub attaches one token to many messages", async () => {
    const token = await googleToken({ jti: undefined });
    for (const id of ["p1", "p2"]) {
      const r = await post("gemini", { authorization: `Bearer ${token}` }, envelope(id));
      assert.deepEqual(r.body, { received: true, duplicate: false }, id);
    }
  });

  test("a source with token_header webhook-signature takes no Bearer token, so a captured one cannot come back unbound", async () => {
    const token = await googleToken();
    assert.equal((await deliver(token, "wh_b5", envelope("b5"), "gemini-signature")).status, 200);
    const before = stack.inboxCount("gemini-signature");
    const replay = await post("gemini-signature", { authorization: `Bearer ${token}` }, forged("b5"));
    assert.equal(replay.status, 401);
    assert.equal((replay.body.error as { code: string }).code, "SIGNATURE_MISSING");
    assert.equal(stack.inboxCount("gemini-signature"), before);
  });

  test("the same token in Authorization: Bearer is accepted too, deduped on jti and body", async () => {
    const body = envelope("b3");
    const token = await googleToken({ jti: "bearer-1" });
    const r = await post("gemini", { authorization: `Bearer ${token}` }, body);
    assert.deepEqual(r.body, { received: true, duplicate: false });
    assert.ok(eventIds("gemini").includes(`jwt:bearer-1:${sha256(body)}`));
  });

  test("a webhook-id next to an Authorization token is not trusted as the event id", async () => {
    const body = envelope("b4");
    const token = await googleToken({ jti: "bearer-2" });
    const first = await post("gemini", { authorization: `Bearer ${token}`, "webhook-id": "chosen-1" }, body);
    const replay = await post("gemini", { authorization: `Bearer ${token}`, "webhook-id": "chosen-2" }, body);
    assert.deepEqual(first.body, { received: true, duplicate: false });
    assert.deepEqual(replay.body, { received: true, duplicate: true });
    assert.ok(!eventIds("gemini").some((id) => id.startsWith("chosen-")));
  });

  test("a token without iat, or older than max_age_s, is refused and nothing is recorded", async () => {
    const before = stack.inboxCount("gemini");
    const cases: [string, string][] = [
      [await googleToken({ iat: undefined }), "SIGNATURE_INVALID"],
      [await googleToken({ iat: nowS() - 3000 }), "TIMESTAMP_OUT_OF_TOLERANCE"],
    ];
    for (const [token, code] of cases) {
      const r = await post(
        "gemini",
        { "webhook-id": `wh_${code}`, "webhook-timestamp": String(nowS()), "webhook-signature": token },
        envelope("b5"),
      );
      assert.equal(r.status, 401, code);
      assert.equal((r.body.error as { code: string }).code, code);
    }
    assert.equal(stack.inboxCount("gemini"), before);
  });

  test("a project (static) HMAC delivery sent to the dynamic source is refused, naming the fix", async () => {
    const body = envelope("b6");
    const at = nowS();
    const signature = signStandardWebhook({ id: "wh_b6", timestampS: at, body, secret: WHSEC });
    const headers = {
      "webhook-id": "wh_b6",
      "webhook-timestamp": String(at),
      "webhook-signature": signature,
    };
    const refused = await post("gemini", headers, body);
    assert.equal(refused.status, 401);
    const error = refused.body.error as { code: string; message: string };
    assert.equal(error.code, "SIGNATURE_INVALID");
    assert.match(error.message, /standard-webhooks/);
    // The same delivery is what the static source takes.
    assert.deepEqual((await post("gemini-static", headers, body)).body, { received: true, duplicate: false });
  });

  test("a per-request (JWT) delivery sent to the static source is refused, naming the fix", async () => {
    const headers = {
      "webhook-id": "wh_b7",
      "webhook-timestamp": String(nowS()),
      "webhook-signature": `v1,${await googleToken()}`,
    };
    const refused = await post("gemini-static", headers, envelope("b7"));
    assert.equal(refused.status, 401);
    const error = refused.body.error as { code: string; message: string };
    assert.equal(error.code, "SIGNATURE_INVALID");
    assert.match(error.message, /scheme jwt/);
    assert.equal((await post("gemini", headers, envelope("b7"))).status, 200);
  });
});
