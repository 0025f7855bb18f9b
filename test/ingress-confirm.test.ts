import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { type CryptoKey, SignJWT } from "jose";
import { defineTask } from "../src/core/task-type.ts";
import { geminiProvider } from "../src/providers/gemini/gemini-provider.ts";
import { type GeminiStandin, startGeminiStandin } from "./fixtures/gemini-standin.ts";
import { waitFor } from "./helpers.ts";
import { startJwksServer } from "./jwks-server.ts";
import { type Stack, startStack } from "./stack.ts";

// A Gemini per-request webhook source (a Google-issued JWT in webhook-signature, no body hash)
// on the whole stack, with the Gemini stand-in as the provider: what the body of a delivery
// says about a job is not taken on trust but read back from Gemini (confirm_with_provider).

const KEY = "AIza-test-gemini-confirm";
const ISSUER = "https://generativelanguage.googleapis.com";
const AUDIENCE = "https://hooks.example.com/hooks/gemini";
const WAIT_MS = 20_000;

let privateKey: CryptoKey;
let closeJwks: () => Promise<void> = async () => {};
let gemini: GeminiStandin;
let stack: Stack;
let minted = 0;

const nowS = () => Math.floor(Date.now() / 1000);
const tokenId = (token: string) => `jwt:${createHash("sha256").update(token).digest("hex")}`;

/** A fresh token, as Google signs one for each delivery. */
function googleToken(): Promise<string> {
  minted++;
  return new SignJWT({ iss: ISSUER, aud: AUDIENCE, iat: nowS(), exp: nowS() + 3600, jti: `c${minted}` })
    .setProtectedHeader({ alg: "RS256", kid: "google-1", typ: "JWT" })
    .sign(privateKey);
}

async function deliver(source: string, token: string, webhookId: string, event: unknown) {
  const res = await fetch(`${stack.url}/hooks/${source}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": webhookId,
      "webhook-timestamp": String(nowS()),
      "webhook-signature": token,
    },
    body: JSON.stringify(event),
  });
  return { status: res.status, body: await res.json() };
}

interface InboxRow {
  source: string;
  event_id: string;
  status: string;
  note: string | null;
}
const inboxRows = (where: string, ...args: string[]) =>
  stack.store.db
    .prepare(`SELECT source, event_id, status, note FROM inbox_events WHERE ${where}`)
    .all(...args) as unknown as InboxRow[];
/** The row recorded for `token`, once the worker has dealt with it. */
const handled = (source: string, token: string) =>
  waitFor(
    () => inboxRows("source = ? AND event_id = ? AND status <> 'received'", source, tokenId(token))[0],
    WAIT_MS,
    `the delivery of ${source} to be handled`,
  );
const eventsOf = (taskId: string, type: string) =>
  (
    stack.store.db
      .prepare("SELECT count(*) AS n FROM task_events WHERE task_id = ? AND type = ?")
      .get(taskId, type) as { n: number }
  ).n;

const envelope = (batch: string) => ({ type: "batch.succeeded", data: { id: batch } });
const response = (text: string) => ({ candidates: [{ content: { parts: [{ text }] } }] });

/** Submits a task whose one step is a Gemini batch, and waits for the batch to be created. */
async function startBatch(text: string): Promise<{ taskId: string; batch: string }> {
  const submitted = await stack.api("/v1/tasks", { body: { type: "test.gemini-confirm", input: { text } } });
  assert.equal(submitted.status, 202);
  const taskId: string = submitted.body.task_id;
  const row = await waitFor(
    () =>
      stack.store.db
        .prepare("SELECT external_id FROM jobs WHERE task_id = ? AND external_id IS NOT NULL")
        .get(taskId) as { external_id: string } | undefined,
    WAIT_MS,
    "the batch to be created",
  );
  return { taskId, batch: row.external_id };
}

const finish = (batch: string, text: string) =>
  gemini.update(batch, {
    done: true,
    metadata: { state: "BATCH_STATE_SUCCEEDED" },
    response: response(text),
  });

const taskOf = async (taskId: string) => (await stack.api(`/v1/tasks/${taskId}`)).body;
const succeeded = (taskId: string) =>
  waitFor(
    async () => {
      const t = await taskOf(taskId);
      return t.status === "succeeded" ? t : null;
    },
    WAIT_MS,
    "the task to succeed",
  );

before(async () => {
  const keys = await startJwksServer("/jwks");
  privateKey = keys.privateKey;
  closeJwks = keys.close;
  const jwksUrl = keys.jwksUrl;
  gemini = await startGeminiStandin(KEY);
  const source = { provider: "gemini", scheme: "jwt", jwks_url: jwksUrl, issuer: ISSUER, audience: AUDIENCE };
  stack = await startStack({
    providers: [geminiProvider({ apiKey: KEY, baseUrl: gemini.baseUrl, timeoutMs: 2000 })],
    taskTypes: [
      defineTask("test.gemini-confirm", async (input: { text: string }, step) =>
        step.job("gen", {
          provider: "gemini",
          input: {
            kind: "batch",
            model: "gemini-2.5-flash",
            requests: [{ contents: [{ parts: [{ text: input.text }] }] }],
          },
        }),
      ),
    ],
    // The reconciler stays out of the way: only deliveries and what they trigger move jobs here.
    pollAfterMs: 3_600_000,
    sources: {
      // As the README configures a Gemini per-request source: confirm_with_provider is on by default.
      gemini: source,
      "gemini-trusting": { ...source, confirm_with_provider: false },
    },
  });
});

after(async () => {
  await stack?.close();
  await gemini?.close();
  await closeJwks();
});

describe("a source that confirms its events with the provider", () => {
  test("a valid token carrying a forged result cannot end the job: Gemini's own answer is applied", async () => {
    const { taskId, batch } = await startBatch("confirm");
    // Whoever holds a token posts an operation that claims the batch is done, with chosen output.
    const forger = await googleToken();
    const forged = { name: batch, done: true, response: { forged: true } };
    assert.deepEqual((await deliver("gemini", forger, "wh_forged", forged)).body, {
      received: true,
      duplicate: false,
    });
    const row = await handled("gemini", forger);
    assert.equal(row.status, "ignored");
    assert.match(row.note!, /confirmed with the provider, which reports running/);
    await waitFor(
      () => inboxRows("event_id = ? AND status = 'applied'", `poll:${batch}:running`)[0],
      WAIT_MS,
      "Gemini's answer to be applied",
    );
    const meanwhile = await taskOf(taskId);
    assert.notEqual(meanwhile.status, "succeeded");
    assert.equal(meanwhile.jobs[0].status, "running");

    // Gemini ends the batch and says so; the result is the batch's, read from Gemini.
    finish(batch, "the real result");
    const done = await googleToken();
    assert.equal((await deliver("gemini", done, "wh_done", envelope(batch))).status, 200);
    const task = await succeeded(taskId);
    assert.deepEqual(task.output, response("the real result"));

    // Gemini retries under the same webhook-id with a fresh token: another event, confirmed
    // again, whose answer is the one already applied.
    const retry = await googleToken();
    assert.deepEqual((await deliver("gemini", retry, "wh_done", envelope(batch))).body, {
      received: true,
      duplicate: false,
    });
    assert.equal((await handled("gemini", retry)).status, "ignored");
    assert.equal(inboxRows("event_id = ?", `poll:${batch}:succeeded`).length, 1);
    assert.equal(eventsOf(taskId, "step.succeeded"), 1);
    assert.deepEqual((await taskOf(taskId)).output, response("the real result"));
  });

  test("an event for a job the provider does not know is rejected with the provider's refusal, and nothing else is recorded", async () => {
    const token = await googleToken();
    assert.equal((await deliver("gemini", token, "wh_unknown", envelope("batches/b999999"))).status, 200);
    const row = await handled("gemini", token);
    assert.equal(row.status, "invalid");
    assert.match(row.note!, /refused to confirm job batches\/b999999/);
    assert.deepEqual(inboxRows("event_id LIKE ?", "poll:batches/b999999:%"), []);
  });

  test("without confirmation, the same job event applied twice (a retry with a fresh token) changes nothing the second time", async () => {
    const { taskId, batch } = await startBatch("trusting");
    finish(batch, "once");
    const first = await googleToken();
    assert.equal((await deliver("gemini-trusting", first, "wh_twice", envelope(batch))).status, 200);
    assert.equal((await handled("gemini-trusting", first)).status, "applied");
    const task = await succeeded(taskId);
    const retry = await googleToken();
    assert.deepEqual((await deliver("gemini-trusting", retry, "wh_twice", envelope(batch))).body, {
      received: true,
      duplicate: false,
    });
    const second = await handled("gemini-trusting", retry);
    assert.equal(second.status, "ignored");
    assert.equal(eventsOf(taskId, "step.succeeded"), 1);
    const after = await taskOf(taskId);
    assert.deepEqual(after.output, task.output);
    assert.equal(after.jobs[0].status, "succeeded");
  });
});
