import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { type IngressStack, startIngressStack } from "./ingress-stack.ts";

/**
 * Random requests against every scheme over real HTTP. Whatever arrives, ingress answers
 * below 500 and records nothing unless the signature is valid (ARCHITECTURE §4.3). The run counts
 * keep the file to a few seconds; a failure prints its seed and shrunk counterexample.
 */

const SOURCES = ["standard-webhooks", "stripe", "github", "goog-hmac", "slack", "jwt", "tiny"];
const HEADER_NAMES = [
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
  "stripe-signature",
  "x-hub-signature-256",
  "x-hub-signature",
  "x-github-delivery",
  "x-goog-signature",
  "x-goog-timestamp",
  "x-slack-signature",
  "x-slack-request-timestamp",
  "authorization",
];

const nowS = () => Math.floor(Date.now() / 1000);

/** Header text as a client can send it: latin-1, no control characters. */
const latin1 = fc
  .integer({ min: 0x20, max: 0xff })
  .filter((c) => c !== 0x7f)
  .map((c) => String.fromCharCode(c));
const junk = fc.string({ unit: latin1, maxLength: 120 });
const hex = fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 0, maxLength: 70 });
const bytes = fc.uint8Array({ maxLength: 80 }).map((b) => Buffer.from(b));
const base64 = bytes.map((b) => b.toString("base64"));
const base64url = bytes.map((b) => b.toString("base64url"));
const timestamp = fc.oneof(
  fc.integer({ min: -400, max: 400 }).map((d) => String(nowS() + d)),
  fc.constantFrom("0", "-1", "1e9", "9".repeat(30), "NaN", ""),
);
const jwtPart = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
const forgedJwt = fc
  .record({
    alg: fc.constantFrom("none", "HS256", "ES256", "RS256", "EdDSA"),
    kid: fc.constantFrom("k1", "k2", undefined),
    exp: fc.integer({ min: -1000, max: 1000 }).map((d) => nowS() + d),
    sig: base64url,
  })
  .map(
    ({ alg, kid, exp, sig }) =>
      `Bearer ${jwtPart({ alg, kid })}.${jwtPart({ iss: "https://sender.example", aud: "https://hooks.example/hooks/jwt", exp })}.${sig}`,
  );

/** Values shaped like each scheme's, so verification gets past parsing often enough to matter. */
const headerValue = fc.oneof(
  junk,
  timestamp,
  hex,
  base64,
  fc.tuple(timestamp, hex, hex).map(([t, a, b]) => `t=${t},v1=${a},v0=${b}`),
  fc.tuple(base64, base64).map(([a, b]) => `v1,${a} v1a,${b}`),
  hex.map((h) => `sha256=${h}`),
  hex.map((h) => `v0=${h}`),
  fc.tuple(base64url, base64url, base64url).map(([a, b, c]) => `Bearer ${a}.${b}.${c}`),
  forgedJwt,
);
const headers = fc.dictionary(fc.constantFrom(...HEADER_NAMES), headerValue, { maxKeys: 6 });
const body = fc.oneof(
  fc.uint8Array({ maxLength: 1500 }).map((b) => Buffer.from(b)),
  fc.json({ maxDepth: 3 }).map((s) => Buffer.from(s)),
);
const contentType = fc.constantFrom("application/json", "text/plain", "application/octet-stream", undefined);

describe("ingress under random input", () => {
  let stack: IngressStack;
  before(async () => {
    stack = await startIngressStack({ tinyLimit: 1024 });
  });
  after(() => stack.close());

  async function post(source: string, h: Record<string, string>, b: Buffer): Promise<number> {
    const res = await fetch(`${stack.url}/hooks/${source}`, {
      method: "POST",
      headers: h,
      body: new Uint8Array(b),
    });
    await res.arrayBuffer();
    return res.status;
  }

  test("random headers, bodies and signatures never get a 5xx and never add an inbox row", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...SOURCES, "unknown"),
        headers,
        body,
        contentType,
        async (source, h, b, type) => {
          const rows = stack.inboxCount();
          const status = await post(source, type ? { ...h, "content-type": type } : h, b);
          assert.ok(status >= 400 && status < 500, `status ${status}`);
          assert.equal(stack.inboxCount(), rows);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("a validly signed request changed in one signed place is refused and adds no row", async () => {
    const signed = fc.constantFrom(...SOURCES).chain((source) =>
      fc.record({
        source: fc.constant(source),
        body: fc.json({ maxDepth: 2 }).map((s) => Buffer.from(s)),
        change: fc.oneof(
          fc.record({
            kind: fc.constant("body" as const),
            at: fc.nat(),
            to: fc.integer({ min: 1, max: 255 }),
          }),
          fc.record({ kind: fc.constant("header" as const), which: fc.nat(), at: fc.nat(), to: latin1 }),
          fc.record({ kind: fc.constant("drop" as const), which: fc.nat() }),
        ),
      }),
    );
    await fc.assert(
      fc.asyncProperty(signed, async ({ source, body: b, change }) => {
        const h = await stack.senders[source]!(b, nowS());
        // X-GitHub-Delivery is not signed: changing it makes a different delivery, not a forgery.
        const names = Object.keys(h).filter((n) => n !== "x-github-delivery");
        const mutated = { body: Buffer.from(b), headers: { ...h } };
        if (change.kind === "body") {
          const i = change.at % (b.length + 1);
          if (i === b.length) mutated.body = Buffer.concat([b, Buffer.from([change.to])]);
          else mutated.body[i] = (b[i]! + change.to) % 256;
        } else {
          const name = names[change.which % names.length]!;
          const value = h[name]!;
          if (change.kind === "drop") delete mutated.headers[name];
          else {
            // The last characters of a base64 value may hold only padding bits, which decoders
            // ignore, and "Bearer" is case-insensitive: neither is a signed byte.
            const from = name === "authorization" ? "Bearer ".length : 0;
            const span = Math.max(1, value.length - from - 3);
            const i = from + (change.at % span);
            if (value[i] === change.to) return;
            mutated.headers[name] = value.slice(0, i) + change.to + value.slice(i + 1);
          }
        }
        const rows = stack.inboxCount();
        const status = await post(
          source,
          { "content-type": "application/json", ...mutated.headers },
          mutated.body,
        );
        assert.ok(status === 401 || (source === "tiny" && status === 413), `status ${status}`);
        assert.equal(stack.inboxCount(), rows);
      }),
      { numRuns: 200 },
    );
  });

  test("the same generator's valid requests are accepted, so the properties above are not vacuous", async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...SOURCES), fc.json({ maxDepth: 2 }), async (source, json) => {
        const b = Buffer.from(JSON.stringify({ n: n++, json }));
        const rows = stack.inboxCount();
        const status = await post(
          source,
          { "content-type": "application/json", ...(await stack.senders[source]!(b, nowS())) },
          b,
        );
        if (source === "tiny" && b.length > 1024) assert.equal(status, 413);
        else {
          assert.equal(status, 200);
          assert.equal(stack.inboxCount(), rows + 1);
        }
      }),
      { numRuns: 40 },
    );
  });
});
