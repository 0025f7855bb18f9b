import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import {
  base64url,
  type CryptoKey,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  type JSONWebKeySet,
  type JWTPayload,
  SignJWT,
} from "jose";
import { type ErrorCode, LonghaulError } from "../src/core/errors.ts";
import { httpStatusOf } from "../src/http/error-status.ts";
import type { Verified, Verifier } from "../src/ingress/scheme.ts";
import { buildSource, checkSources, type Source, type SourceConfig } from "../src/ingress/sources.ts";

const NOW_S = 1_767_225_600;
const ISSUER = "https://accounts.google.com";
const AUDIENCE = "https://hooks.example.com/hooks/pubsub";
const BODY = Buffer.from('{"message":{"data":"eyJqb2JfaWQiOiJqb2JfMSJ9","messageId":"1"}}');
const BODY_SHA256 = createHash("sha256").update(BODY).digest("hex");

interface Signer {
  kid: string;
  alg: "RS256" | "ES256";
  privateKey: CryptoKey;
  publicKey: CryptoKey;
}

let rsa: Signer;
let ec: Signer;
let stranger: Signer;
let jwks: JSONWebKeySet;
let jwksServer: Server;
let jwksUrl: string;
let jwksRequests = 0;

async function signer(alg: Signer["alg"], kid: string): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicKey };
}

before(async () => {
  rsa = await signer("RS256", "rsa-1");
  ec = await signer("ES256", "ec-1");
  stranger = await signer("RS256", "rsa-1");
  jwks = {
    keys: [
      { ...(await exportJWK(rsa.publicKey)), kid: rsa.kid, alg: rsa.alg, use: "sig" },
      { ...(await exportJWK(ec.publicKey)), kid: ec.kid, alg: ec.alg, use: "sig" },
    ],
  };
  jwksServer = createServer((req, res) => {
    jwksRequests++;
    if (req.url === "/broken") {
      res.writeHead(500).end("down");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(jwks));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, "127.0.0.1", resolve));
  jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`;
});

after(() => new Promise<void>((resolve) => jwksServer.close(() => resolve())));

function source(over: Partial<SourceConfig> = {}): Verifier {
  return buildSource("pubsub", {
    provider: "sim",
    scheme: "jwt",
    jwks_url: jwksUrl,
    issuer: ISSUER,
    audience: AUDIENCE,
    tolerance_s: 60,
    ...over,
  }).verifier;
}

async function token(
  by: Signer,
  claims: JWTPayload = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT({ iss: ISSUER, aud: AUDIENCE, iat: NOW_S, exp: NOW_S + 3600, jti: "msg-1", ...claims })
    .setProtectedHeader({ alg: by.alg, kid: by.kid, ...header })
    .sign(by.privateKey);
}

function check(v: Verifier, authorization: string | undefined, body = BODY): Promise<Verified> {
  return Promise.resolve().then(() => v.verify({ headers: { authorization }, body, nowMs: NOW_S * 1000 }));
}

function refusedWith(code: ErrorCode, messageIncludes?: string): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof LonghaulError, `expected a LonghaulError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (messageIncludes) assert.ok(err.message.includes(messageIncludes), err.message);
    return true;
  };
}

describe("jwt verification", () => {
  test("an RS256 token checked against a JWKS served over HTTP is accepted, with jti, body hash and iat", async () => {
    const verified = await check(source(), `Bearer ${await token(rsa)}`);
    assert.deepEqual(verified, { eventId: `jwt:msg-1:${BODY_SHA256}`, timestampS: NOW_S });
  });

  test("an ES256 token checked against an inline JWKS is accepted", async () => {
    const inline = source({ jwks_url: undefined, jwks });
    assert.equal((await check(inline, `Bearer ${await token(ec)}`)).eventId, `jwt:msg-1:${BODY_SHA256}`);
  });

  test("the remote JWKS is fetched once and reused across requests", async () => {
    const v = source();
    const before = jwksRequests;
    for (let i = 0; i < 5; i++) await check(v, `Bearer ${await token(i % 2 ? rsa : ec, { jti: `m${i}` })}`);
    assert.equal(jwksRequests - before, 1);
  });

  test("a token without jti leaves the event id to the body hash", async () => {
    const verified = await check(source(), `Bearer ${await token(rsa, { jti: undefined })}`);
    assert.equal(verified.eventId, null);
  });

  test("a token from another issuer is refused", async () => {
    await assert.rejects(
      check(source(), `Bearer ${await token(rsa, { iss: "https://evil.example" })}`),
      refusedWith("SIGNATURE_INVALID", '"iss"'),
    );
  });

  test("a token for another audience is refused", async () => {
    await assert.rejects(
      check(source(), `Bearer ${await token(rsa, { aud: "https://other.example/hooks" })}`),
      refusedWith("SIGNATURE_INVALID", '"aud"'),
    );
  });

  test("an expired token is refused beyond the tolerance and accepted within it", async () => {
    await assert.rejects(
      check(source(), `Bearer ${await token(rsa, { exp: NOW_S - 61 })}`),
      refusedWith("TIMESTAMP_OUT_OF_TOLERANCE", "expired"),
    );
    await check(source(), `Bearer ${await token(rsa, { exp: NOW_S - 59 })}`);
  });

  test("a token that is not valid yet is refused as out of tolerance", async () => {
    await assert.rejects(
      check(source(), `Bearer ${await token(rsa, { nbf: NOW_S + 600 })}`),
      refusedWith("TIMESTAMP_OUT_OF_TOLERANCE"),
    );
  });

  test("a token without exp is refused: it would be valid forever", async () => {
    await assert.rejects(
      check(source(), `Bearer ${await token(rsa, { exp: undefined })}`),
      refusedWith("SIGNATURE_INVALID", '"exp"'),
    );
  });

  test('an unsigned token (alg "none") is refused', async () => {
    const part = (o: object) => base64url.encode(JSON.stringify(o));
    const claims = { iss: ISSUER, aud: AUDIENCE, iat: NOW_S, exp: NOW_S + 3600 };
    for (const alg of ["none", "None", "NONE"]) {
      const unsigned = `${part({ alg, kid: rsa.kid })}.${part(claims)}.`;
      await assert.rejects(check(source(), `Bearer ${unsigned}`), refusedWith("SIGNATURE_INVALID"));
    }
  });

  test("an HS256 token keyed with the public key (algorithm confusion) is refused", async () => {
    const pem = await exportSPKI(rsa.publicKey);
    const jwk = JSON.stringify(jwks.keys[0]);
    for (const secret of [pem, jwk]) {
      const forged = await new SignJWT({ iss: ISSUER, aud: AUDIENCE, exp: NOW_S + 3600 })
        .setProtectedHeader({ alg: "HS256", kid: rsa.kid })
        .sign(new TextEncoder().encode(secret));
      await assert.rejects(check(source(), `Bearer ${forged}`), refusedWith("SIGNATURE_INVALID", "alg"));
    }
  });

  test("a token signed by a key that is not in the JWKS is refused", async () => {
    await assert.rejects(
      check(source(), `Bearer ${await token(stranger)}`),
      refusedWith("SIGNATURE_INVALID", "signature"),
    );
    await assert.rejects(
      check(source(), `Bearer ${await token(stranger, {}, { kid: "rsa-unknown" })}`),
      refusedWith("SIGNATURE_INVALID", "No key"),
    );
  });

  test("a token whose alg is not pinned by the source is refused", async () => {
    const rsOnly = source({ algorithms: ["RS256"] });
    await check(rsOnly, `Bearer ${await token(rsa)}`);
    await assert.rejects(check(rsOnly, `Bearer ${await token(ec)}`), refusedWith("SIGNATURE_INVALID", "alg"));
  });

  test("a body_sha256 claim binds the token to the body; without it the token alone suffices", async () => {
    const digest = createHash("sha256").update(BODY).digest("hex");
    const bound = `Bearer ${await token(rsa, { body_sha256: digest })}`;
    await check(source(), bound);
    await assert.rejects(
      check(source(), bound, Buffer.from(`${BODY.toString("utf8")} `)),
      refusedWith("SIGNATURE_INVALID", "body_sha256"),
    );
    for (const wrong of [digest.toUpperCase(), 42, ""]) {
      await assert.rejects(
        check(source(), `Bearer ${await token(rsa, { body_sha256: wrong })}`),
        refusedWith("SIGNATURE_INVALID", "body_sha256"),
      );
    }
  });

  test("a missing or non-Bearer Authorization is refused as missing a signature", async () => {
    for (const value of [undefined, "", "Basic dXNlcjpwYXNz", "Bearer", "Bearer a b"]) {
      await assert.rejects(check(source(), value), refusedWith("SIGNATURE_MISSING"), String(value));
    }
  });

  test("garbage in place of a token is refused as invalid, never thrown as something else", async () => {
    const garbage = [
      "abc",
      "a.b.c",
      "..",
      "e30.e30.",
      `${"x".repeat(5000)}.y.z`,
      "eyJhbGciOiJSUzI1NiJ9.%%%.sig",
    ];
    for (const value of garbage) {
      await assert.rejects(check(source(), `Bearer ${value}`), refusedWith("SIGNATURE_INVALID"), value);
    }
  });

  test("a JWKS that cannot be fetched is reported as unavailable (503), not as a bad signature", async () => {
    const broken = source({ jwks_url: jwksUrl.replace("/jwks", "/broken") });
    await assert.rejects(check(broken, `Bearer ${await token(rsa)}`), refusedWith("JWKS_UNAVAILABLE"));
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const unreachable = source({ jwks_url: `http://127.0.0.1:${port}/jwks` });
    const err = await check(unreachable, `Bearer ${await token(rsa)}`).catch((e: unknown) => e);
    assert.ok(refusedWith("JWKS_UNAVAILABLE")(err));
    assert.equal(httpStatusOf(err), 503);
  });
});

describe("jwt token age", () => {
  test("a token without iat is refused as invalid, naming the claim", async () => {
    await assert.rejects(
      check(source(), `Bearer ${await token(rsa, { iat: undefined })}`),
      refusedWith("SIGNATURE_INVALID", '"iat"'),
    );
  });

  test("a token older than max_age_s plus the tolerance is refused; one just within is accepted", async () => {
    // Default max_age_s 300, tolerance 60: iat may be up to 360 s old.
    await check(source(), `Bearer ${await token(rsa, { iat: NOW_S - 360 })}`);
    await assert.rejects(
      check(source(), `Bearer ${await token(rsa, { iat: NOW_S - 361 })}`),
      refusedWith("TIMESTAMP_OUT_OF_TOLERANCE", "max_age_s"),
    );
    const strict = source({ max_age_s: 30 });
    await check(strict, `Bearer ${await token(rsa, { iat: NOW_S - 90 })}`);
    await assert.rejects(
      check(strict, `Bearer ${await token(rsa, { iat: NOW_S - 91 })}`),
      refusedWith("TIMESTAMP_OUT_OF_TOLERANCE", "max_age_s"),
    );
  });

  test("a token issued in the future beyond the tolerance is refused; within it, accepted", async () => {
    await check(source(), `Bearer ${await token(rsa, { iat: NOW_S + 60 })}`);
    await assert.rejects(
      check(source(), `Bearer ${await token(rsa, { iat: NOW_S + 61 })}`),
      refusedWith("TIMESTAMP_OUT_OF_TOLERANCE", "future"),
    );
  });

  test("an iat that is not a number is refused as invalid", async () => {
    await assert.rejects(
      check(source(), `Bearer ${await token(rsa, { iat: String(NOW_S) as unknown as number })}`),
      refusedWith("SIGNATURE_INVALID", '"iat"'),
    );
  });
});

describe("jwt body binding", () => {
  const SENDER = "https://sender.example";
  const sender = (over: Partial<SourceConfig> = {}) => source({ issuer: SENDER, ...over });
  const signedBy = (claims: JWTPayload = {}) => token(rsa, { iss: SENDER, ...claims });
  const base64url = createHash("sha256").update(BODY).digest("base64url");

  test("a sender that is not Google must put the body's SHA-256 in body_sha256 by default", async () => {
    await assert.rejects(
      check(sender(), `Bearer ${await signedBy()}`),
      refusedWith("SIGNATURE_INVALID", '"body_sha256"'),
    );
    await check(sender(), `Bearer ${await signedBy({ body_sha256: BODY_SHA256 })}`);
    await check(sender(), `Bearer ${await signedBy({ body_sha256: base64url })}`);
  });

  test("a token bound to one body is refused with another", async () => {
    const bound = `Bearer ${await signedBy({ body_sha256: BODY_SHA256 })}`;
    await assert.rejects(
      check(sender(), bound, Buffer.from('{"message":{"data":"e30=","messageId":"2"}}')),
      refusedWith("SIGNATURE_INVALID", "body_sha256"),
    );
  });

  test("body_hash_claim names another claim, and false turns the requirement off", async () => {
    const plaidStyle = sender({ body_hash_claim: "request_body_sha256" });
    await check(plaidStyle, `Bearer ${await signedBy({ request_body_sha256: BODY_SHA256 })}`);
    await assert.rejects(
      check(plaidStyle, `Bearer ${await signedBy({ body_sha256: BODY_SHA256 })}`),
      refusedWith("SIGNATURE_INVALID", '"request_body_sha256"'),
    );
    await check(sender({ body_hash_claim: false }), `Bearer ${await signedBy()}`);
  });

  test("Google's issuer needs no body hash by default, but can be made to require one", async () => {
    await check(source(), `Bearer ${await token(rsa)}`);
    const gemini = "https://generativelanguage.googleapis.com";
    await check(source({ issuer: gemini }), `Bearer ${await token(rsa, { iss: gemini })}`);
    const lookalike = "https://google.com.sender.example";
    await assert.rejects(
      check(source({ issuer: lookalike }), `Bearer ${await token(rsa, { iss: lookalike })}`),
      refusedWith("SIGNATURE_INVALID", '"body_sha256"'),
    );
    await assert.rejects(
      check(source({ body_hash_claim: "body_sha256" }), `Bearer ${await token(rsa)}`),
      refusedWith("SIGNATURE_INVALID", '"body_sha256"'),
    );
  });

  test("the same jti with another body is another event; the same token and body, the same one", async () => {
    const authorization = `Bearer ${await token(rsa, { jti: "msg-7" })}`;
    const other = Buffer.from('{"message":{"data":"e30=","messageId":"7"}}');
    const first = await check(source(), authorization);
    const again = await check(source(), authorization);
    const changed = await check(source(), authorization, other);
    assert.equal(first.eventId, `jwt:msg-7:${BODY_SHA256}`);
    assert.equal(again.eventId, first.eventId);
    assert.equal(changed.eventId, `jwt:msg-7:${createHash("sha256").update(other).digest("hex")}`);
  });
});

describe("jwt tokens in webhook-signature (Gemini per-request webhooks)", () => {
  const GEMINI = "https://generativelanguage.googleapis.com";
  const gemini = (over: Partial<SourceConfig> = {}) => source({ issuer: GEMINI, ...over });
  const signed = (headers: Record<string, string>, body = BODY, v = gemini()) =>
    Promise.resolve().then(() => v.verify({ headers, body, nowMs: NOW_S * 1000 }));
  const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

  test("the event id is the token's SHA-256, bound to the body; the unsigned webhook-id is only a delivery id", async () => {
    const t = await token(rsa, { iss: GEMINI });
    assert.deepEqual(await signed({ "webhook-signature": `v1,${t}`, "webhook-id": "wh_chosen" }), {
      eventId: `jwt:${sha256(t)}`,
      timestampS: NOW_S,
      bindsBody: true,
      deliveryId: "wh_chosen",
    });
    // Another webhook-id, another prefix, the token among other entries: the same event.
    const again = await signed({ "webhook-signature": `garbage ${t}`, "webhook-id": "wh_other" });
    assert.equal(again.eventId, `jwt:${sha256(t)}`);
  });

  test("a Google issuer's token there is good for 60 s plus the tolerance by default; in Authorization, 300 s", async () => {
    // Tolerance 60 (see source()): webhook-signature 60 + 60, Authorization 300 + 60.
    const aged = (iat: number) => token(rsa, { iss: GEMINI, iat });
    await signed({ "webhook-signature": await aged(NOW_S - 120) });
    await assert.rejects(
      signed({ "webhook-signature": await aged(NOW_S - 121) }),
      refusedWith("TIMESTAMP_OUT_OF_TOLERANCE", "max_age_s 60 s"),
    );
    await check(gemini(), `Bearer ${await aged(NOW_S - 360)}`);
    // A max_age_s of the source's own applies to both.
    const set = gemini({ max_age_s: 200 });
    await signed({ "webhook-signature": await aged(NOW_S - 260) }, BODY, set);
    await check(set, `Bearer ${await aged(NOW_S - 260)}`);
    await assert.rejects(
      check(set, `Bearer ${await aged(NOW_S - 261)}`),
      refusedWith("TIMESTAMP_OUT_OF_TOLERANCE"),
    );
    // Another issuer's token keeps 300 s in either place.
    const sender = source({ issuer: "https://sender.example", body_hash_claim: false });
    const theirs = await token(rsa, { iss: "https://sender.example", iat: NOW_S - 360 });
    await signed({ "webhook-signature": theirs }, BODY, sender);
  });

  test("token_header names the one header a source reads its token from", async () => {
    const t = await token(rsa, { iss: GEMINI });
    const signatureOnly = gemini({ token_header: "webhook-signature" });
    await signed({ "webhook-signature": t }, BODY, signatureOnly);
    // A token captured from webhook-signature cannot come back as a Bearer token, unbound.
    await assert.rejects(
      check(signatureOnly, `Bearer ${t}`),
      refusedWith("SIGNATURE_MISSING", "token_header"),
    );
    const bearerOnly = gemini({ token_header: "authorization" });
    await check(bearerOnly, `Bearer ${t}`);
    await assert.rejects(
      signed({ "webhook-signature": t }, BODY, bearerOnly),
      refusedWith("SIGNATURE_MISSING", "token_header"),
    );
    assert.throws(
      () => gemini({ token_header: "Authorization" as never }),
      refusedWith("CONFIG_INVALID", "token_header"),
    );
  });
});

describe("which sources confirm their events with the provider", () => {
  const named = (name: string, c: Partial<SourceConfig>): [string, Source] => [
    name,
    buildSource(name, {
      provider: "gemini",
      scheme: "jwt",
      jwks,
      jwks_url: undefined,
      issuer: ISSUER,
      audience: AUDIENCE,
      ...c,
    } as SourceConfig),
  ];
  const week = 7 * 24 * 3_600_000;
  const canAsk = (provider: string) =>
    provider === "gemini" ? true : provider === "mute" ? false : undefined;

  test("a source whose tokens carry no body hash confirms by default when its provider has status", () => {
    const sources = new Map([
      named("google", {}),
      named("hashed", { issuer: "https://sender.example" }),
      named("unhashed", { issuer: "https://sender.example", body_hash_claim: false }),
      named("trusting", { confirm_with_provider: false }),
      named("mute", { provider: "mute" }),
      named("elsewhere", { provider: "not-on-this-node" }),
      [
        "hmac",
        buildSource("hmac", { provider: "gemini", secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"] }),
      ],
      [
        "asked",
        buildSource("asked", {
          provider: "gemini",
          secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
          confirm_with_provider: true,
        }),
      ],
    ]);
    assert.deepEqual([...checkSources(sources, canAsk, week)].sort(), ["asked", "google", "unhashed"]);
  });

  test("confirm_with_provider must be a boolean, and needs a provider that has status", () => {
    assert.throws(() => named("x", { confirm_with_provider: "yes" as never }), refusedWith("CONFIG_INVALID"));
    const sources = new Map([named("mute", { provider: "mute", confirm_with_provider: true })]);
    assert.throws(() => checkSources(sources, canAsk, week), refusedWith("CONFIG_INVALID", "status"));
  });

  test("the dedupe horizon must outlast a token, or a replay after the prune would pass as new", () => {
    // Default max_age_s 300 plus the default tolerance 300.
    const sources = new Map([named("google", {})]);
    assert.equal(checkSources(sources, canAsk, 600_000).size, 1);
    assert.throws(
      () => checkSources(sources, canAsk, 599_000),
      refusedWith("CONFIG_INVALID", "dedupe_horizon_s"),
    );
  });
});

describe("jwt source configuration", () => {
  const build = (over: Partial<SourceConfig>) => () =>
    buildSource("pubsub", {
      provider: "sim",
      scheme: "jwt",
      jwks_url: "https://www.googleapis.com/oauth2/v3/certs",
      issuer: ISSUER,
      audience: AUDIENCE,
      ...over,
    });

  test("a jwt source needs no secrets", () => {
    assert.equal(build({})().scheme, "jwt");
  });

  test("a jwt source without a key set, or with both kinds, is refused", () => {
    assert.throws(build({ jwks_url: undefined }), refusedWith("CONFIG_INVALID", "jwks"));
    assert.throws(build({ jwks }), refusedWith("CONFIG_INVALID", "exactly one"));
    assert.throws(build({ jwks_url: "not a url" }), refusedWith("CONFIG_INVALID", "jwks_url"));
    assert.throws(build({ jwks_url: "file:///etc/passwd" }), refusedWith("CONFIG_INVALID", "jwks_url"));
  });

  test("jwks_url must be https, except to a loopback host", () => {
    for (const url of [
      "http://www.googleapis.com/oauth2/v3/certs",
      "http://10.0.0.7/jwks",
      "http://localhost.example/k",
    ]) {
      assert.throws(build({ jwks_url: url }), refusedWith("CONFIG_INVALID", "https"), url);
    }
    assert.throws(
      build({ jwks_url: "http://www.googleapis.com/k" }),
      refusedWith("CONFIG_INVALID", '"pubsub"'),
    );
    for (const url of [
      "https://www.googleapis.com/oauth2/v3/certs",
      "http://127.0.0.1:8080/jwks",
      "http://127.3.2.1/jwks",
      "http://localhost:9000/jwks",
      "http://[::1]:9000/jwks",
    ]) {
      assert.equal(build({ jwks_url: url })().scheme, "jwt", url);
    }
  });

  test("issuer and audience are required", () => {
    assert.throws(build({ issuer: undefined }), refusedWith("CONFIG_INVALID", "issuer"));
    assert.throws(build({ audience: "" }), refusedWith("CONFIG_INVALID", "audience"));
    assert.throws(build({ audience: [] }), refusedWith("CONFIG_INVALID", "audience"));
  });

  test("max_age_s must be a whole number of seconds, 1 or more", () => {
    for (const max_age_s of [0, -1, 1.5, "300", Number.NaN]) {
      assert.throws(
        build({ max_age_s: max_age_s as number }),
        refusedWith("CONFIG_INVALID", "max_age_s"),
        String(max_age_s),
      );
    }
    assert.equal(build({ max_age_s: 3600 })().scheme, "jwt");
  });

  test("body_hash_claim must name a claim or be false", () => {
    for (const body_hash_claim of ["", true, 42, "a claim"]) {
      assert.throws(
        build({ body_hash_claim: body_hash_claim as string }),
        refusedWith("CONFIG_INVALID", "body_hash_claim"),
        String(body_hash_claim),
      );
    }
  });

  test('"none" and HMAC algorithms cannot be configured', () => {
    for (const algorithms of [["none"], ["HS256"], ["RS256", "HS512"], [], ["rs256"]]) {
      assert.throws(build({ algorithms }), refusedWith("CONFIG_INVALID", "algorithms"), algorithms.join());
    }
  });

  test("an inline JWKS must hold public keys only", async () => {
    const privateJwk = await exportJWK(rsa.privateKey);
    const inline = (keys: unknown[]) => build({ jwks_url: undefined, jwks: { keys } as JSONWebKeySet });
    assert.throws(inline([privateJwk]), refusedWith("CONFIG_INVALID", "public keys"));
    assert.throws(inline([{ kty: "oct", k: "c2VjcmV0" }]), refusedWith("CONFIG_INVALID", "public keys"));
    assert.throws(inline([]), refusedWith("CONFIG_INVALID"));
    assert.throws(inline(["nope"]), refusedWith("CONFIG_INVALID"));
  });
});
