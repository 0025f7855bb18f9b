import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { safeLoggerOptions } from "../src/http/log-redaction.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const ADMIN_KEY = "admin-key-that-must-not-be-logged-42";

/** A pino destination that keeps every line written to it. */
function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString("utf8"));
      done();
    },
  });
  return { stream, text: () => lines.join("") };
}

const tokenOf = (url: string) => new URL(url).pathname.split("/").at(-1)!;

describe("the log of a served instance at info level", () => {
  const log = capture();
  let stack: Stack;
  before(async () => {
    stack = await startStack({ logger: pino({ level: "info" }, log.stream), adminKey: ADMIN_KEY });
  });
  after(() => stack.close());

  const waitingStep = async (type: string) => {
    const r = await stack.api("/v1/tasks", { body: { type, input: {} } });
    assert.equal(r.status, 202);
    return waitFor(async () => {
      const t = await stack.api(`/v1/tasks/${r.body.task_id}`);
      return t.body.steps?.[0]?.status === "waiting" ? t.body.steps[0] : null;
    });
  };

  test("holds no callback or approval token, API key or admin key", async () => {
    const cb = await waitingStep("demo.callback");
    const ok = await fetch(cb.callback_url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ done: true }),
    });
    assert.equal(ok.status, 200);
    // A used token answers 409: the error path is logged too.
    const again = await fetch(cb.callback_url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(again.status, 409);

    const ap = await waitingStep("demo.approval");
    assert.equal((await fetch(ap.approval_url)).status, 200);
    const approved = await fetch(ap.approval_url, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: "session=cookie-secret-value" },
      body: JSON.stringify({ decision: "approve" }),
    });
    assert.equal(approved.status, 200, await approved.text());

    const admin = await fetch(`${stack.url}/v1/admin/tenants`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}`, "x-api-key": stack.key },
    });
    assert.equal(admin.status, 200);

    const text = log.text();
    // The requests were logged, with the token segment replaced.
    assert.match(text, /"url":"\/v1\/callbacks\/\[redacted\]"/);
    assert.match(text, /"url":"\/v1\/approvals\/\[redacted\]"/);
    for (const [what, secret] of [
      ["callback token", tokenOf(cb.callback_url)],
      ["approval token", tokenOf(ap.approval_url)],
      ["reject token", tokenOf(ap.approvals[0].reject_url)],
      ["API key", stack.key],
      ["admin key", ADMIN_KEY],
      ["cookie", "cookie-secret-value"],
    ] as const) {
      assert.ok(!text.includes(secret), `the log holds the ${what}`);
    }
  });
});

describe("the logger longhaul makes itself", () => {
  test("blanks key headers and capability tokens in messages, fields and errors", () => {
    const log = capture();
    const logger = pino(safeLoggerOptions("info"), log.stream);
    logger.info(
      { headers: { authorization: "Bearer lh_secret_key", "x-api-key": "lh_other_key" }, url: "/ok" },
      "posting to https://example.com/v1/callbacks/v1.tok-en.sig?x=1",
    );
    logger.error({ err: new Error("bad link /v1/approvals/v1.abc.def") }, "failed");
    logger.info({ req: { headers: { cookie: "sid=cookie-value" } } }, "with a request");
    const text = log.text();
    for (const secret of ["lh_secret_key", "lh_other_key", "v1.tok-en.sig", "v1.abc.def", "cookie-value"]) {
      assert.ok(!text.includes(secret), `the log holds ${secret}`);
    }
    assert.match(text, /\/v1\/callbacks\/\[redacted\]\?x=1/);
    assert.match(text, /bad link \/v1\/approvals\/\[redacted\]/);
  });
});
