import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import Stripe from "stripe";
import { type ErrorCode, LonghaulError } from "../src/core/errors.ts";
import { signGithub } from "../src/ingress/github.ts";
import { signGoogHmac } from "../src/ingress/goog-hmac.ts";
import type { Verified, Verifier, VerifyRequest } from "../src/ingress/scheme.ts";
import { signSlack } from "../src/ingress/slack.ts";
import { buildSource, type SourceConfig, schemes } from "../src/ingress/sources.ts";
import { signStripe } from "../src/ingress/stripe.ts";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";

type Vector = Record<string, string | number> & { scheme: string; body: string };

const vectors = (
  JSON.parse(readFileSync(new URL("./fixtures/webhook-signatures.json", import.meta.url), "utf8")) as {
    vectors: Vector[];
  }
).vectors;

const NOW_S = 1_767_225_600;
const TOLERANCE_S = 300;
const BODY = Buffer.from('{"id":"evt_1","type":"job.succeeded","data":{"job_id":"job_1"}}');

function verifier(scheme: string, secrets: string[], extra: Partial<SourceConfig> = {}): Verifier {
  return buildSource("test", { provider: "sim", scheme, secrets, tolerance_s: TOLERANCE_S, ...extra })
    .verifier;
}

/** Runs a verifier, turning a synchronous throw into a rejection so every scheme is checked alike. */
function check(v: Verifier, req: VerifyRequest): Promise<Verified> {
  return Promise.resolve().then(() => v.verify(req));
}

function refusedWith(code: ErrorCode, messageIncludes?: string): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof LonghaulError, `expected a LonghaulError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (messageIncludes) assert.ok(err.message.includes(messageIncludes), err.message);
    return true;
  };
}

function request(headers: Record<string, string | undefined>, body = BODY, nowS = NOW_S): VerifyRequest {
  return { headers, body, nowMs: nowS * 1000 };
}

describe("the published vectors", () => {
  const reproduce: Record<string, (v: Vector) => { headers: Record<string, string>; signed: string }> = {
    "standard-webhooks": (v) => {
      const secret = v.version === "v1a" ? `whsk_${v.ed25519_seed_base64}` : String(v.secret);
      const id = String(v.webhook_id);
      const signed = signStandardWebhook({ id, timestampS: Number(v.timestamp), body: v.body, secret });
      const headers = {
        "webhook-id": id,
        "webhook-timestamp": String(v.timestamp),
        "webhook-signature": signed,
      };
      return { headers, signed };
    },
    stripe: (v) => {
      const signed = signStripe({ timestampS: Number(v.timestamp), body: v.body, secret: String(v.secret) });
      return { headers: { "stripe-signature": signed }, signed: signed.split(",v1=")[1]! };
    },
    github: (v) => {
      const signed = signGithub({ body: v.body, secret: String(v.secret) });
      return { headers: { "x-hub-signature-256": signed }, signed };
    },
    slack: (v) => {
      const signed = signSlack({ timestampS: Number(v.timestamp), body: v.body, secret: String(v.secret) });
      const headers = { "x-slack-signature": signed, "x-slack-request-timestamp": String(v.timestamp) };
      return { headers, signed };
    },
  };
  const secretsOf = (v: Vector) =>
    v.version === "v1a" ? [`whpk_${v.ed25519_public_base64}`] : [String(v.secret)];

  test("every vector in the fixture file belongs to a scheme reproduced here", () => {
    assert.ok(vectors.length >= 5);
    for (const v of vectors) assert.ok(reproduce[v.scheme], `no reproducer for a ${v.scheme} vector`);
  });

  for (const v of vectors) {
    const label = `${v.scheme}${v.version ? ` ${v.version}` : ""}`;
    test(`the ${label} vector is reproduced exactly, verified, and refused once the body changes`, async () => {
      const { headers, signed } = reproduce[v.scheme]!(v);
      assert.equal(signed, v.expected_signature ?? v.expected_v1 ?? v.expected_header);
      const nowS = typeof v.timestamp === "number" ? v.timestamp : NOW_S;
      const source = verifier(v.scheme, secretsOf(v));
      await check(source, request(headers, Buffer.from(v.body, "utf8"), nowS));
      await assert.rejects(
        check(source, request(headers, Buffer.from(`${v.body} `, "utf8"), nowS)),
        refusedWith("SIGNATURE_INVALID"),
      );
    });
  }
});

/** How each HMAC scheme signs, so the failure modes below run against all of them. */
interface HmacCase {
  scheme: string;
  secret: string;
  previousSecret: string;
  /** Headers of a request signed at `timestampS` (ignored by schemes that sign no time). */
  sign(body: Buffer, secret: string, timestampS: number): Record<string, string>;
  signatureHeader: string;
  timestampHeader: string | null;
  /** The event id the scheme reads from a request signed by `sign` over BODY. */
  eventId: string | null;
}

const hmacCases: HmacCase[] = [
  {
    scheme: "stripe",
    secret: "whsec_test_secret",
    previousSecret: "whsec_previous_secret",
    sign: (body, secret, timestampS) => ({ "stripe-signature": signStripe({ timestampS, body, secret }) }),
    signatureHeader: "stripe-signature",
    timestampHeader: null,
    eventId: "evt_1",
  },
  {
    scheme: "github",
    secret: "It's a Secret to Everybody",
    previousSecret: "the secret before",
    sign: (body, secret) => ({
      "x-hub-signature-256": signGithub({ body, secret }),
      "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    }),
    signatureHeader: "x-hub-signature-256",
    timestampHeader: null,
    eventId: `sha256:${createHash("sha256").update(BODY).digest("hex")}`,
  },
  {
    scheme: "goog-hmac",
    secret: "your-google-webhook-secret",
    previousSecret: "the google secret before",
    sign: (body, secret, timestampS) => ({
      "x-goog-signature": signGoogHmac({ timestampS, body, secret }),
      "x-goog-timestamp": String(timestampS),
    }),
    signatureHeader: "x-goog-signature",
    timestampHeader: "x-goog-timestamp",
    eventId: "evt_1",
  },
  {
    scheme: "slack",
    secret: "8f742231b10e8888abcd99yyyzzz85a5",
    previousSecret: "0f742231b10e8888abcd99yyyzzz85a5",
    sign: (body, secret, timestampS) => ({
      "x-slack-signature": signSlack({ timestampS, body, secret }),
      "x-slack-request-timestamp": String(timestampS),
    }),
    signatureHeader: "x-slack-signature",
    timestampHeader: "x-slack-request-timestamp",
    eventId: null,
  },
];

for (const c of hmacCases) {
  describe(`${c.scheme} verification`, () => {
    const source = () => verifier(c.scheme, [c.secret]);
    const signed = (timestampS = NOW_S, secret = c.secret, body = BODY) =>
      request(c.sign(body, secret, timestampS), body);
    const withHeader = (req: VerifyRequest, name: string, value: string | undefined) => ({
      ...req,
      headers: { ...req.headers, [name]: value },
    });
    const signsTime = c.scheme !== "github";

    test("a correctly signed request is accepted with its event id", async () => {
      const verified = await check(source(), signed());
      assert.deepEqual(
        { eventId: verified.eventId, timestampS: verified.timestampS },
        { eventId: c.eventId, timestampS: signsTime ? NOW_S : null },
      );
    });

    test("a request missing each signature header is refused as missing a signature", async () => {
      const headers = Object.keys(signed().headers).filter((h) => h !== "x-github-delivery");
      for (const name of headers) {
        await assert.rejects(
          check(source(), withHeader(signed(), name, undefined)),
          refusedWith("SIGNATURE_MISSING", name),
        );
        await assert.rejects(
          check(source(), withHeader(signed(), name, "")),
          refusedWith("SIGNATURE_MISSING"),
        );
      }
    });

    test("a signature made with another secret is refused", async () => {
      await assert.rejects(
        check(source(), signed(NOW_S, `${c.secret}-other`)),
        refusedWith("SIGNATURE_INVALID"),
      );
    });

    test("a truncated signature is refused", async () => {
      const req = signed();
      const full = String(req.headers[c.signatureHeader]);
      for (const cut of [1, 2, 32]) {
        await assert.rejects(
          check(source(), withHeader(req, c.signatureHeader, full.slice(0, -cut))),
          refusedWith("SIGNATURE_INVALID"),
        );
      }
    });

    test("a body changed after signing is refused", async () => {
      const req = signed();
      const tampered = Buffer.from(BODY.toString("utf8").replace("job_1", "job_2"));
      await assert.rejects(check(source(), { ...req, body: tampered }), refusedWith("SIGNATURE_INVALID"));
    });

    test("a request signed with the previous secret is accepted while that secret is still listed", async () => {
      const req = signed(NOW_S, c.previousSecret);
      await check(verifier(c.scheme, [c.secret, c.previousSecret]), req);
      await assert.rejects(check(source(), req), refusedWith("SIGNATURE_INVALID"));
    });

    test("a source without secrets is refused when it is built", () => {
      for (const secrets of [[], [""], undefined]) {
        assert.throws(
          () => buildSource("test", { provider: "sim", scheme: c.scheme, ...(secrets ? { secrets } : {}) }),
          refusedWith("CONFIG_INVALID"),
        );
      }
      assert.throws(() => verifier(c.scheme, [` ${c.secret}`]), refusedWith("CONFIG_INVALID", "whitespace"));
    });

    if (!signsTime) return;

    test("a timestamp at the edge of the tolerance is accepted in both directions", async () => {
      for (const t of [NOW_S - TOLERANCE_S, NOW_S + TOLERANCE_S]) {
        assert.equal((await check(source(), signed(t))).timestampS, t);
      }
    });

    test("a validly signed old timestamp is refused as out of tolerance", async () => {
      await assert.rejects(
        check(source(), signed(NOW_S - TOLERANCE_S - 1)),
        refusedWith("TIMESTAMP_OUT_OF_TOLERANCE", "old"),
      );
    });

    test("a validly signed future timestamp is refused as out of tolerance", async () => {
      await assert.rejects(
        check(source(), signed(NOW_S + TOLERANCE_S + 1)),
        refusedWith("TIMESTAMP_OUT_OF_TOLERANCE", "future"),
      );
    });

    test("a timestamp that is not a whole number of seconds is refused as invalid", async () => {
      for (const bad of ["soon", `${NOW_S}.5`, `-${NOW_S}`, "1e9", " ", "９"]) {
        const req =
          c.timestampHeader === null
            ? withHeader(signed(), c.signatureHeader, `t=${bad},v1=${"0".repeat(64)}`)
            : withHeader(signed(), c.timestampHeader, bad);
        await assert.rejects(check(source(), req), refusedWith("SIGNATURE_INVALID"));
      }
    });
  });
}

describe("stripe specifics", () => {
  const SECRET = "whsec_test_secret";
  const source = () => verifier("stripe", [SECRET]);
  const sig = (value: string, body = BODY) => request({ "stripe-signature": value }, body);
  const valid = () => signStripe({ timestampS: NOW_S, body: BODY, secret: SECRET });

  test("a header holding several v1 signatures is accepted when one of them is valid", async () => {
    const v1 = valid().split(",v1=")[1]!;
    const header = `t=${NOW_S},v1=${"a".repeat(64)},v1=potato,v1=${v1},v0=${"b".repeat(64)}`;
    assert.equal((await check(source(), sig(header))).eventId, "evt_1");
  });

  test("a correct MAC under another scheme than v1 is never accepted", async () => {
    const v1 = valid().split(",v1=")[1]!;
    for (const scheme of ["v0", "v2", "V1", "v1 "]) {
      await assert.rejects(
        check(source(), sig(`t=${NOW_S},${scheme}=${v1}`)),
        refusedWith("SIGNATURE_INVALID", "no v1"),
      );
    }
  });

  test("a header that is not t=…,v1=… is refused, naming what is missing", async () => {
    const v1 = valid().split(",v1=")[1]!;
    for (const header of [
      "I'm not even a real signature header",
      `v1=${v1}`,
      `t=${NOW_S},t=${NOW_S},v1=${v1}`,
    ]) {
      await assert.rejects(check(source(), sig(header)), refusedWith("SIGNATURE_INVALID"));
    }
  });

  test("the event id is the body's id, and null when the body has none or is not JSON", async () => {
    for (const [body, id] of [
      ['{"object":"event"}', null],
      ["not json", null],
      ['{"id":42}', null],
      ['["evt_9"]', null],
    ] as const) {
      const bytes = Buffer.from(body);
      const header = signStripe({ timestampS: NOW_S, body: bytes, secret: SECRET });
      assert.equal((await check(source(), sig(header, bytes))).eventId, id, body);
    }
  });

  test("an event signed by stripe-node's generateTestHeaderString is accepted, and refused once tampered", async () => {
    const payload = JSON.stringify({ id: "evt_test_webhook", object: "event" }, null, 2);
    const now = Math.floor(Date.now() / 1000);
    const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET, timestamp: now });
    const live = (body: string) => ({
      headers: { "stripe-signature": header },
      body: Buffer.from(body),
      nowMs: Date.now(),
    });
    assert.deepEqual(await check(source(), live(payload)), { eventId: "evt_test_webhook", timestampS: now });
    await assert.rejects(
      check(source(), live(payload.replace("evt_test_webhook", "evt_test_webhooK"))),
      refusedWith("SIGNATURE_INVALID"),
    );
    const old = Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET, timestamp: now - 301 });
    await assert.rejects(
      check(source(), { ...live(payload), headers: { "stripe-signature": old } }),
      refusedWith("TIMESTAMP_OUT_OF_TOLERANCE"),
    );
    const v0 = Stripe.webhooks.generateTestHeaderString({
      payload,
      secret: SECRET,
      timestamp: now,
      scheme: "v0",
    });
    await assert.rejects(
      check(source(), { ...live(payload), headers: { "stripe-signature": v0 } }),
      refusedWith("SIGNATURE_INVALID"),
    );
  });

  test("stripe-node accepts what signStripe produces", () => {
    const payload = '{"id":"evt_2","object":"event"}';
    const now = Math.floor(Date.now() / 1000);
    const header = signStripe({ timestampS: now, body: payload, secret: SECRET });
    assert.equal(Stripe.webhooks.constructEvent(payload, header, SECRET, 300).id, "evt_2");
  });
});

describe("github specifics", () => {
  const SECRET = "It's a Secret to Everybody";
  const source = () => verifier("github", [SECRET]);

  test("only the SHA-1 X-Hub-Signature is never enough, and the refusal says so", async () => {
    const req = request({ "x-hub-signature": "sha1=0000000000000000000000000000000000000000" });
    await assert.rejects(check(source(), req), refusedWith("SIGNATURE_MISSING", "SHA-1"));
  });

  test("a signature under another algorithm prefix is refused even when the hex is right", async () => {
    const hex = signGithub({ body: BODY, secret: SECRET }).slice("sha256=".length);
    for (const value of [`sha1=${hex}`, `SHA256=${hex}`, hex, `sha256=${hex.toUpperCase()}`]) {
      await assert.rejects(
        check(source(), request({ "x-hub-signature-256": value })),
        refusedWith("SIGNATURE_INVALID"),
      );
    }
  });

  test("the event id is the body hash whatever X-GitHub-Delivery says, which is kept as the delivery id", async () => {
    const eventId = `sha256:${createHash("sha256").update(BODY).digest("hex")}`;
    const signature = signGithub({ body: BODY, secret: SECRET });
    const delivered = (delivery?: string) =>
      check(source(), request({ "x-hub-signature-256": signature, "x-github-delivery": delivery }));
    assert.deepEqual(await delivered("72d3162e-cc78-11e3-81ab-4c9367dc0958"), {
      eventId,
      timestampS: null,
      deliveryId: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    });
    assert.deepEqual(await delivered("another-delivery-id"), {
      eventId,
      timestampS: null,
      deliveryId: "another-delivery-id",
    });
    assert.deepEqual(await delivered(undefined), { eventId, timestampS: null });
  });
});

describe("slack specifics", () => {
  const SECRET = "8f742231b10e8888abcd99yyyzzz85a5";

  test("a correct MAC under another version than v0 is refused", async () => {
    const v0 = signSlack({ timestampS: NOW_S, body: BODY, secret: SECRET });
    const req = request({
      "x-slack-signature": `v1${v0.slice(2)}`,
      "x-slack-request-timestamp": String(NOW_S),
    });
    await assert.rejects(check(verifier("slack", [SECRET]), req), refusedWith("SIGNATURE_INVALID", "v0"));
  });

  test("the event id is the Events API event_id", async () => {
    const body = Buffer.from('{"type":"event_callback","event_id":"Ev0PV52K21"}');
    const headers = {
      "x-slack-signature": signSlack({ timestampS: NOW_S, body, secret: SECRET }),
      "x-slack-request-timestamp": String(NOW_S),
    };
    assert.equal((await check(verifier("slack", [SECRET]), request(headers, body))).eventId, "Ev0PV52K21");
  });
});

describe("source configuration", () => {
  test("every scheme is reachable by name, and an unknown one is refused listing the known ones", () => {
    assert.deepEqual([...schemes.keys()].sort(), [
      "github",
      "goog-hmac",
      "jwt",
      "slack",
      "standard-webhooks",
      "stripe",
    ]);
    assert.throws(
      () => buildSource("x", { provider: "sim", scheme: "paypal", secrets: ["s"] }),
      refusedWith("CONFIG_INVALID", "stripe"),
    );
  });

  test("limits are whole numbers, and defaults apply when they are left out", () => {
    const s = buildSource("x", { provider: "sim", scheme: "github", secrets: ["s"] });
    assert.deepEqual([s.name, s.scheme, s.toleranceS, s.bodyLimit], ["x", "github", 300, 1024 * 1024]);
    for (const bad of [
      { tolerance_s: -1 },
      { tolerance_s: 1.5 },
      { body_limit: 0 },
      { body_limit: Number.NaN },
    ]) {
      assert.throws(
        () => buildSource("x", { provider: "sim", scheme: "github", secrets: ["s"], ...bad }),
        refusedWith("CONFIG_INVALID"),
      );
    }
  });
});

test("a source with an unknown key is refused by name when it is built", () => {
  // `bodyLimit` for `body_limit`: ignored, the source would keep the default limit.
  assert.throws(
    () => buildSource("misspelt", { provider: "sim", secrets: ["whsec_eA=="], bodyLimit: 10 } as never),
    refusedWith("CONFIG_INVALID", 'unknown key "bodyLimit"; known keys: provider, scheme, secrets'),
  );
  assert.throws(() => buildSource("list", [] as never), refusedWith("CONFIG_INVALID", "must be an object"));
});
