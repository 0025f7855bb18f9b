import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { type CryptoKey, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";
import { type IngressStack, startIngressStack } from "./ingress-stack.ts";

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
let jwksServer: Server;
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
  const keys = await generateKeyPair("RS256", { extractable: true });
  privateKey = keys.privateKey;
  const jwks = {
    keys: [{ ...(await exportJWK(keys.publicKey)), kid: "google-1", alg: "RS256", use: "sig" }],
  };
  jwksServer = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(jwks)),
  );
  await new Promise<void>((resolve) => jwksServer.listen(0, "127.0.0.1", resolve));
  const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/oauth2/v3/certs`;
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
      // A static (project) source: Standard Webhooks HMAC with the console's whsec_ secret.
      "gemini-static": { provider: "gemini", scheme: "standard-webhooks", secrets: [WHSEC] },
    },
  });
});

after(async () => {
  await stack.close();
  await new Promise<void>((resolve) => jwksServer.close(() => resolve()));
});

describe("Gemini per-request (dynamic) webhooks", () => {
  test("a delivery with the JWT in webhook-signature is accepted and recorded under its webhook-id", async () => {
    const body = envelope("b1");
    const r = await post(
      "gemini",
      {
        "webhook-id": "wh_b1",
        "webhook-timestamp": String(nowS()),
        "webhook-signature": await googleToken(),
      },
      body,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { received: true, duplicate: false });
    assert.ok(eventIds("gemini").includes("wh_b1"));
  });

  test("a retry under the same webhook-id, with a fresh token behind a v1, prefix, is a duplicate", async () => {
    const body = envelope("b2");
    const headers = async (signature: string) => ({
      "webhook-id": "wh_b2",
      "webhook-timestamp": String(nowS()),
      "webhook-signature": signature,
    });
    const first = await post("gemini", await headers(await googleToken()), body);
    assert.deepEqual(first.body, { received: true, duplicate: false });
    const retry = await post("gemini", await headers(`v1,${await googleToken()}`), body);
    assert.equal(retry.status, 200);
    assert.deepEqual(retry.body, { received: true, duplicate: true });
    assert.equal(eventIds("gemini").filter((id) => id === "wh_b2").length, 1);
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
