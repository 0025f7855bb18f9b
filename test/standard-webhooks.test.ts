import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { Webhook } from "standardwebhooks";
import { type ErrorCode, LonghaulError } from "../src/core/errors.ts";
import type { Verified, VerifyRequest } from "../src/ingress/scheme.ts";
import { standardWebhooks } from "../src/ingress/standard-webhooks.ts";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";

interface Vector {
  scheme: string;
  version?: string;
  secret?: string;
  ed25519_seed_base64?: string;
  ed25519_public_base64?: string;
  webhook_id: string;
  timestamp: number;
  body: string;
  expected_signature: string;
}

const vectors = (
  JSON.parse(readFileSync(new URL("./fixtures/webhook-signatures.json", import.meta.url), "utf8")) as {
    vectors: Vector[];
  }
).vectors.filter((v) => v.scheme === "standard-webhooks");

function vector(version: string): Vector {
  const v = vectors.find((x) => x.version === version);
  assert.ok(v, `the fixture vectors hold a standard-webhooks ${version} vector`);
  return v;
}

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OLD_SECRET = "whsec_c2VjcmV0IHRoYXQgd2FzIHJvdGF0ZWQgb3V0";
const ID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
const NOW_S = 1_767_225_600;
const BODY = Buffer.from('{"type":"job.succeeded","data":{"job_id":"job_1"}}');

function signed(over: { id?: string; timestampS?: number; body?: Buffer; secret?: string } = {}): Input {
  const id = over.id ?? ID;
  const timestampS = over.timestampS ?? NOW_S;
  const body = over.body ?? BODY;
  return {
    headers: {
      "webhook-id": id,
      "webhook-timestamp": String(timestampS),
      "webhook-signature": signStandardWebhook({ id, timestampS, body, secret: over.secret ?? SECRET }),
    },
    body,
    secrets: [SECRET],
    nowMs: NOW_S * 1000,
  };
}

/** A request and the secrets of the source it is posted to. */
type Input = VerifyRequest & { secrets: string[] };

/** Verifies through a verifier made for a source holding `input.secrets`, as ingress does. */
function check(input: Input): Promise<Verified> {
  return Promise.resolve().then(() =>
    standardWebhooks
      .create({ name: "test", provider: "sim", secrets: input.secrets, tolerance_s: 300 })
      .verify(input),
  );
}

function withHeader(input: Input, name: string, value: string | undefined): Input {
  return { ...input, headers: { ...input.headers, [name]: value } };
}

function withHeaderArray(input: Input, values: string[]): Input {
  return { ...input, headers: { ...input.headers, "webhook-signature": values } };
}

function refusedWith(code: ErrorCode): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof LonghaulError, `expected a LonghaulError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  };
}

test("the published v1 vector is reproduced and verified, by a source and in one shot", async () => {
  const v = vector("v1");
  const body = Buffer.from(v.body, "utf8");
  const signature = signStandardWebhook({
    id: v.webhook_id,
    timestampS: v.timestamp,
    body,
    secret: v.secret!,
  });
  assert.equal(signature, v.expected_signature);
  const request: VerifyRequest = {
    headers: {
      "webhook-id": v.webhook_id,
      "webhook-timestamp": String(v.timestamp),
      "webhook-signature": v.expected_signature,
    },
    body,
    nowMs: v.timestamp * 1000,
  };
  const expected = { eventId: v.webhook_id, timestampS: v.timestamp };
  assert.deepEqual(await check({ ...request, secrets: [v.secret!] }), expected);
  assert.deepEqual(standardWebhooks.verify({ ...request, secrets: [v.secret!], toleranceS: 300 }), expected);
});

test("the published v1a vector is reproduced from the seed and verified with the public key", async () => {
  const v = vector("v1a");
  const body = Buffer.from(v.body, "utf8");
  const signature = signStandardWebhook({
    id: v.webhook_id,
    timestampS: v.timestamp,
    body,
    secret: `whsk_${v.ed25519_seed_base64}`,
  });
  assert.equal(signature, v.expected_signature);
  const input: Input = {
    headers: {
      "webhook-id": v.webhook_id,
      "webhook-timestamp": String(v.timestamp),
      "webhook-signature": v.expected_signature,
    },
    body,
    secrets: [`whpk_${v.ed25519_public_base64}`],
    nowMs: v.timestamp * 1000,
  };
  assert.deepEqual(await check(input), { eventId: v.webhook_id, timestampS: v.timestamp });
  await assert.rejects(
    check({ ...input, body: Buffer.from(`${v.body} `) }),
    refusedWith("SIGNATURE_INVALID"),
  );
});

test("a timestamp at the edge of the tolerance is accepted in both directions", async () => {
  for (const timestampS of [NOW_S - 300, NOW_S + 300]) {
    assert.equal((await check(signed({ timestampS }))).timestampS, timestampS);
  }
});

test("a validly signed but old timestamp is refused as out of tolerance", async () => {
  await assert.rejects(check(signed({ timestampS: NOW_S - 301 })), refusedWith("TIMESTAMP_OUT_OF_TOLERANCE"));
});

test("a validly signed future timestamp is refused as out of tolerance", async () => {
  await assert.rejects(check(signed({ timestampS: NOW_S + 301 })), refusedWith("TIMESTAMP_OUT_OF_TOLERANCE"));
});

test("a timestamp that is not a whole number of seconds is refused as invalid", async () => {
  for (const bad of ["soon", "1767225600.5", "-1767225600", "1e9", ""]) {
    const input = withHeader(signed(), "webhook-timestamp", bad);
    await assert.rejects(check(input), refusedWith(bad === "" ? "SIGNATURE_MISSING" : "SIGNATURE_INVALID"));
  }
});

test("a request missing any one of the three headers is refused as missing a signature", async () => {
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const input = withHeader(signed(), name, undefined);
    await assert.rejects(
      check(input),
      (err) => refusedWith("SIGNATURE_MISSING")(err) && (err as Error).message.includes(name),
    );
  }
});

test("a signature made with another secret is refused", async () => {
  const input = signed({ secret: "whsec_b3RoZXIgc2VjcmV0IG9mIHNvbWVvbmUgZWxzZQ==" });
  await assert.rejects(check(input), refusedWith("SIGNATURE_INVALID"));
});

test("a truncated signature is refused", async () => {
  const input = signed();
  const full = input.headers["webhook-signature"] as string;
  await assert.rejects(
    check(withHeader(input, "webhook-signature", full.slice(0, -4))),
    refusedWith("SIGNATURE_INVALID"),
  );
});

test("a header holding several signatures is accepted when one of them is valid", async () => {
  const input = signed();
  const valid = input.headers["webhook-signature"] as string;
  const list = `v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,whatever ${valid} v1a,AAAA`;
  assert.equal((await check(withHeader(input, "webhook-signature", list))).eventId, ID);
});

test("a correct MAC under an unknown version is never accepted", async () => {
  const input = signed();
  const mac = (input.headers["webhook-signature"] as string).slice(3);
  for (const version of ["v2", "v0", "V1", "v1b"]) {
    await assert.rejects(
      check(withHeader(input, "webhook-signature", `${version},${mac}`)),
      refusedWith("SIGNATURE_INVALID"),
    );
  }
});

test("a message signed with the previous secret is accepted while that secret is still listed", async () => {
  const input = signed({ secret: OLD_SECRET });
  assert.equal((await check({ ...input, secrets: [SECRET, OLD_SECRET] })).eventId, ID);
  await assert.rejects(check({ ...input, secrets: [SECRET] }), refusedWith("SIGNATURE_INVALID"));
});

test("a signature made by the standardwebhooks npm package is accepted, and refused once the body is tampered", async () => {
  const timestamp = new Date(NOW_S * 1000);
  const body = '{"type":"job.running","data":{"job_id":"job_7"}}';
  const headers = {
    "webhook-id": ID,
    "webhook-timestamp": String(NOW_S),
    "webhook-signature": new Webhook(SECRET).sign(ID, timestamp, body),
  };
  const input: Input = {
    headers,
    body: Buffer.from(body),
    secrets: [SECRET],
    nowMs: NOW_S * 1000,
  };
  assert.deepEqual(await check(input), { eventId: ID, timestampS: NOW_S });
  const tampered = Buffer.from(body.replace("job_7", "job_8"));
  await assert.rejects(check({ ...input, body: tampered }), refusedWith("SIGNATURE_INVALID"));
});

test("a signature of the wrong length never throws anything but a LonghaulError", async () => {
  const input = signed();
  const entries = [
    "v1,",
    "v1,A",
    "v1,AAAA",
    `v1,${"A".repeat(4000)}`,
    "v1,not base64 at all!",
    "v1a,",
    "v1a,AAAA",
    `v1a,${Buffer.alloc(65).toString("base64")}`,
    `v1a,${"/".repeat(300)}`,
    ",",
    "v1",
  ];
  for (const entry of entries) {
    await assert.rejects(
      check({
        ...withHeader(input, "webhook-signature", entry),
        secrets: [SECRET, `whpk_${vector("v1a").ed25519_public_base64}`],
      }),
      refusedWith("SIGNATURE_INVALID"),
    );
  }
});

test("the raw body bytes are signed, so a body that is not valid UTF-8 still verifies", async () => {
  const body = Buffer.from([0x7b, 0xff, 0xfe, 0x80, 0x7d]);
  const key = Buffer.from(SECRET.slice("whsec_".length), "base64");
  const mac = createHmac("sha256", key).update(`${ID}.${NOW_S}.`).update(body).digest("base64");
  const input = withHeader(signed({ body }), "webhook-signature", `v1,${mac}`);
  assert.equal((await check(input)).eventId, ID);
  await assert.rejects(
    check({ ...input, body: Buffer.from(body.toString("utf8")) }),
    refusedWith("SIGNATURE_INVALID"),
  );
});

test("a repeated header is read from its first value", async () => {
  const input = signed();
  const valid = input.headers["webhook-signature"] as string;
  assert.equal((await check(withHeaderArray(input, [valid, "v1,AAAA"]))).eventId, ID);
});

test("a source whose secret is unusable is refused when it is built, not on each delivery", () => {
  for (const secret of ["whsec_not*base64", "whpk_AAAA", "whsk_AAAA", "whsec_"]) {
    assert.throws(
      () => standardWebhooks.create({ name: "test", provider: "sim", secrets: [secret] }),
      refusedWith("CONFIG_INVALID"),
      secret,
    );
  }
  assert.throws(
    () => standardWebhooks.create({ name: "test", provider: "sim", secrets: [] }),
    refusedWith("CONFIG_INVALID"),
  );
});
