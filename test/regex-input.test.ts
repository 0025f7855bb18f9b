import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { toMs } from "../src/core/duration.ts";
import { EVENT_PATTERN } from "../src/core/event-filter.ts";
import { readJson } from "../src/core/json-input.ts";
import { validateGraph } from "../src/graph/graph-spec.ts";
import { parseTemplate, parseWhen, resolveTemplate } from "../src/graph/template.ts";
import { jwt } from "../src/ingress/jwt.ts";
import { parseTimestampS } from "../src/ingress/scheme.ts";
import { vetTarget } from "../src/outbound/ssrf.ts";
import { generateTokenKey, Keyring } from "../src/tokens/keyring.ts";
import { verifyToken } from "../src/tokens/token.ts";
import { cpuNowMs } from "./helpers.ts";

/*
 * Every regular expression that src applies to request input, fed the input that makes a
 * backtracking pattern slow, at the size a request can carry (1 MB bodies). Each must answer
 * within a second of this process's CPU time, far above what a linear pattern needs; a
 * quadratic pattern at this size takes minutes. CPU time, not wall-clock time, is judged, so
 * other processes on a busy machine do not stretch it; and the best of five runs.
 *
 * Patterns applied only to bounded or already-validated text are noted where they live:
 * `^\d{1,15}$` (event ids, signed timestamps) is bounded by its quantifier; `/%00/i` (URLs)
 * is a literal; the dashboard's asset name, the keyring's and Standard Webhooks' base64
 * checks read configuration or single-class anchored text; ssrf's IPv6 patterns read only
 * text that `isIP` accepted or the resolver returned, at most 45 characters.
 */

const MB = 1024 * 1024;

function fast(label: string, run: () => unknown): void {
  const times: number[] = [];
  for (let i = 0; i < 5 && !times.some((t) => t < 1000); i++) {
    const started = cpuNowMs();
    try {
      run();
    } catch {
      // Refusing is the expected outcome for most of these inputs; only the time matters.
    }
    times.push(cpuNowMs() - started);
  }
  assert.ok(
    times.some((t) => t < 1000),
    `${label}: ${times.map((t) => t.toFixed(1)).join(", ")} ms`,
  );
}

async function fastAsync(label: string, run: () => Promise<unknown>): Promise<void> {
  const times: number[] = [];
  for (let i = 0; i < 5 && !times.some((t) => t < 1000); i++) {
    const started = cpuNowMs();
    await run().catch(() => {});
    times.push(cpuNowMs() - started);
  }
  assert.ok(
    times.some((t) => t < 1000),
    `${label}: ${times.map((t) => t.toFixed(1)).join(", ")} ms`,
  );
}

describe("regular expressions on request input stay linear", () => {
  test("graph when, template paths and node ids", () => {
    fast("when: spaces between the reference and a stray character", () =>
      parseWhen(`{{a}}${" ".repeat(MB)}y`),
    );
    fast("when: spaces before an unclosed reference", () => parseWhen(`${" ".repeat(MB)}{{ a`));
    fast("template: a long segment that fails at its end", () =>
      parseTemplate(`{{ input.${"a".repeat(MB)}! }}`),
    );
    fast("template: many openings without a close", () => parseTemplate("{{".repeat(MB / 2)));
    fast("template: many short references", () => parseTemplate("{{input.a}}".repeat(MB / 11)));
    fast("graph: many short references", () =>
      validateGraph({ nodes: [{ id: "a", kind: "job", with: { input: "{{input.a}}".repeat(MB / 11) } }] }),
    );
    const list = Array.from({ length: 1000 }, (_, i) => i);
    fast("template: an array index of digits that fails at its end", () =>
      resolveTemplate(`{{ input.list.${"1".repeat(1000)}x }}`, { input: { list }, nodes: {} }),
    );
    fast("node id", () => validateGraph({ nodes: [{ id: `${"a".repeat(MB)}!`, kind: "callback" }] }));
  });

  test("durations", () => {
    fast("digits that end without a unit", () => toMs(`${"1".repeat(MB)}x` as "1s"));
    fast("digits, a dot, digits, no unit", () =>
      toMs(`${"1".repeat(MB / 2)}.${"1".repeat(MB / 2)}x` as "1s"),
    );
    fast("many dots", () => toMs(`1${".1".repeat(MB / 2)}s` as "1s"));
  });

  test("event filters of webhook endpoints", () => {
    fast("a long dotted pattern", () => EVENT_PATTERN.test(`${"a.".repeat(MB / 2)}!`));
  });

  test("signed timestamps", () => {
    fast("a long run of digits", () => parseTimestampS("9".repeat(MB), "webhook-timestamp"));
  });

  test("capability tokens", () => {
    const keyring = Keyring.from([generateTokenKey("k1")]);
    fast("a payload of base64url that fails at its end", () =>
      verifyToken(keyring, `v1.${"A".repeat(MB)}!.AAAA`, Date.now()),
    );
  });

  test("JSON bodies, including the prototype-key checks run on them", () => {
    const poisonish = JSON.stringify({ s: `"__proto__"${" ".repeat(64)}`.repeat(MB / 80) });
    fast("many quoted __proto__ without a colon, in a string", () => readJson(poisonish));
    fast("a long string of quotes and backslashes", () => readJson(`"${'\\"'.repeat(MB / 2)}"`));
  });

  test("JWT Authorization headers", async () => {
    const verifier = jwt.create({
      name: "j",
      scheme: "jwt",
      provider: "sim",
      jwks_url: "https://keys.example/jwks.json",
      issuer: "https://sender.example",
      audience: "https://hooks.example",
    } as never);
    const authorization = `Bearer ${" ".repeat(MB / 2)}a${" ".repeat(MB / 2)}b`;
    await fastAsync("spaces around a token followed by more text", async () =>
      verifier.verify({ headers: { authorization }, body: Buffer.from("{}"), nowMs: Date.now() }),
    );
  });

  test("outbound URL hosts", async () => {
    const host = `${"1".repeat(MB / 4)}.example`;
    await fastAsync("a long numeric label", () =>
      vetTarget(`http://${host}/`, { allowPrivateNetworks: false }, async () => [
        { address: "93.184.216.34", family: 4 },
      ]),
    );
    await fastAsync("a bracketed IPv6 literal with a zone", () =>
      vetTarget("http://[fe80::1%25eth0]/", { allowPrivateNetworks: false }, async () => []),
    );
  });
});
