import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createLonghaul, type Longhaul } from "../src/app.ts";
import type { LonghaulError } from "../src/core/errors.ts";
import { defineTask } from "../src/core/task-type.ts";
import { YIELD_CLAIM } from "../src/engine/worker.ts";
import { type ApiGatewayV2Event, toLambdaHandler } from "../src/http/lambda.ts";
import { parseBriefEvent } from "../src/providers/brief-event.ts";
import type { Provider } from "../src/providers/provider.ts";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";
import { loopFreeDuringSync, quietLog, tempDir, waitFor } from "./helpers.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/** A provider in this process: every create answers a job that a signed webhook ends. */
function fakeProvider(): Provider & { created: string[] } {
  const created: string[] = [];
  return {
    name: "fake",
    created,
    async create(req) {
      const jobId = `job_${req.taskId}_${req.stepId}`;
      if (!created.includes(jobId)) created.push(jobId);
      return { jobId, status: "running" };
    },
    parseEvent: (body) => parseBriefEvent(body),
  };
}

const summarize = defineTask<{ text: string }, unknown>(
  "summarize",
  async (input, step) => step.job("summary", { provider: "fake", input }),
  {
    validate(input) {
      if (typeof (input as { text?: unknown })?.text !== "string") throw new Error('"text" must be a string');
    },
  },
);
const wait = defineTask("wait", async (_input, step) =>
  step.waitForEvent("paid", { match: { event: "invoice.paid" }, timeout: "1h" }),
);
const doubler = defineTask("double", async (input: { n: number }, step) =>
  step.run("twice", () => input.n * 2),
);

function signedHook(id: string, body: string, secret = SECRET): RequestInit {
  const at = Math.floor(Date.now() / 1000);
  return {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(at),
      "webhook-signature": signStandardWebhook({ id, timestampS: at, body, secret }),
    },
    body,
  };
}

describe("an embedded instance: submit, signal, cancel, drain and fetch without listening", () => {
  const tmp = tempDir();
  let lh: Longhaul;
  const provider = fakeProvider();
  before(async () => {
    lh = await createLonghaul({
      databaseUrl: `sqlite:${join(tmp.dir, "embed.db")}`,
      tasks: [summarize, wait],
      taskTypes: [doubler],
      providers: [provider],
      sources: { fake: { provider: "fake", scheme: "standard-webhooks", secrets: [SECRET] } },
      publicUrl: "https://app.example.com",
      logger: quietLog(),
    });
  });
  after(async () => {
    await lh.close();
    tmp.cleanup();
  });

  const status = async (taskId: string) => (await lh.store.getTask("tn_default", taskId))?.task.status;

  test("submit then drain runs a task to succeeded; start() is never called", async () => {
    const submitted = await lh.submit({ type: "double", input: { n: 21 }, client_request_id: "d1" });
    assert.equal(submitted.created, true);
    assert.equal(submitted.status, "pending");
    const again = await lh.submit(undefined, { type: "double", input: { n: 21 }, client_request_id: "d1" });
    assert.deepEqual(again, { ...submitted, created: false });

    const drained = await lh.drain();
    assert.ok(drained.processed >= 1);
    assert.equal(drained.remaining, false);
    const task = (await lh.store.getTask("tn_default", submitted.task_id))?.task;
    assert.equal(task?.status, "succeeded");
    assert.equal(task?.output, 42);
    assert.deepEqual(await lh.drain({ maxMs: 100 }), { processed: 0, remaining: false });
  });

  test("the default tenant is created once and named explicitly too; the HTTP API's checks and errors apply", async () => {
    assert.deepEqual(
      (await lh.store.listTenants()).map((t) => t.id),
      ["tn_default"],
    );
    const explicit = await lh.submit("tn_default", { type: "double", input: { n: 1 } });
    assert.equal(explicit.created, true);
    await assert.rejects(
      lh.submit({ type: "nope", input: {} }),
      (e: LonghaulError) => e.code === "TASK_TYPE_UNKNOWN",
    );
    await assert.rejects(
      lh.submit({ type: "summarize", input: { text: 3 } }),
      (e: LonghaulError) => e.code === "VALIDATION_FAILED" && /"text" must be a string/.test(e.message),
    );
    await assert.rejects(
      lh.submit({ type: "double", input: { n: 1, doc: { file_id: "file_01JNOSUCHFILE0000000000000" } } }),
      (e: LonghaulError) => e.code === "FILE_NOT_FOUND" && e.param === "input.doc.file_id",
    );
    await assert.rejects(
      lh.submit({ type: "double", input: { n: 1, doc: { url: "https://127.0.0.1/x" } } }),
      (e: LonghaulError) => e.code === "URL_NOT_ALLOWED",
    );
    await assert.rejects(
      lh.submit({ input: {} } as never),
      (e: LonghaulError) => e.code === "VALIDATION_FAILED" && e.message === '"type" in the body is required.',
    );
    await assert.rejects(
      lh.signal({ name: "" }),
      (e: LonghaulError) => e.code === "VALIDATION_FAILED" && /"name" in the body/.test(e.message),
    );
    let deep: unknown = 1;
    for (let i = 0; i < 120; i++) deep = [deep];
    await assert.rejects(
      lh.submit({ type: "double", input: deep }),
      (e: LonghaulError) => e.code === "VALIDATION_FAILED" && /deeper than|nest/i.test(e.message),
    );
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await assert.rejects(
      lh.submit({ type: "double", input: cyclic }),
      (e: LonghaulError) => e.code === "VALIDATION_FAILED" && /not JSON/.test(e.message),
    );
    for (const n of [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN]) {
      await assert.rejects(
        lh.submit({ type: "double", input: { n: [1, n] } }),
        (e: LonghaulError) => e.code === "VALIDATION_FAILED" && /JSON cannot carry/.test(e.message),
        String(n),
      );
      await assert.rejects(
        lh.signal({ name: "finite", data: n }),
        (e: LonghaulError) => e.code === "VALIDATION_FAILED" && /JSON cannot carry/.test(e.message),
      );
    }
    await assert.rejects(
      lh.submit("tn_missing", { type: "double", input: { n: 1 } }),
      (e: LonghaulError) => e.code === "TENANT_NOT_FOUND",
    );
    await assert.rejects(lh.cancel("t_unknown"), (e: LonghaulError) => e.code === "TASK_NOT_FOUND");
    await lh.drain();
  });

  test("signal ends a waitForEvent; cancel ends a waiting task", async () => {
    const paid = await lh.submit({ type: "wait" });
    const other = await lh.submit({ type: "wait" });
    await lh.drain();
    assert.equal(await status(paid.task_id), "waiting");

    const sent = await lh.signal({ name: "invoice.paid", data: { amount: 5 }, id: "sig_1" });
    assert.equal(sent.duplicate, false);
    assert.equal(sent.matched, 2);
    assert.equal((await lh.signal(undefined, { name: "invoice.paid", id: "sig_1" })).duplicate, true);
    await lh.drain();
    assert.equal(await status(paid.task_id), "succeeded");
    const output = (await lh.store.getTask("tn_default", paid.task_id))?.task.output;
    assert.deepEqual((output as { data: unknown } | undefined)?.data, { amount: 5 });

    const third = await lh.submit("tn_default", { type: "wait", client_request_id: "w3" });
    await lh.drain();
    assert.equal(await status(third.task_id), "waiting");
    assert.equal((await lh.signal("tn_default", { name: "invoice.paid", id: "sig_2" })).matched, 1);
    await lh.drain();
    assert.equal(await status(third.task_id), "succeeded");
    const fourth = await lh.submit({ type: "summarize", input: { text: "x" } });
    await lh.drain();
    assert.equal(await status(fourth.task_id), "waiting");
    assert.deepEqual(await lh.cancel(fourth.task_id), { task_id: fourth.task_id, status: "canceled" });
    // As over HTTP, an ended task cannot be canceled.
    await assert.rejects(
      lh.cancel("tn_default", other.task_id),
      (e: LonghaulError) => e.code === "TASK_NOT_CANCELABLE",
    );
    // A canceled task re-runs as a new task; the same client_request_id again is that task.
    const rerun = await lh.rerun(fourth.task_id, { client_request_id: "again-4" });
    assert.equal(rerun.rerun_of, fourth.task_id);
    assert.equal(rerun.created, true);
    const same = await lh.rerun("tn_default", fourth.task_id, { client_request_id: "again-4" });
    assert.deepEqual([same.task_id, same.created], [rerun.task_id, false]);
    assert.equal((await lh.get(rerun.task_id)).rerun_of, fourth.task_id);
    assert.deepEqual((await lh.get(fourth.task_id)).reruns, [rerun.task_id]);
    await assert.rejects(lh.rerun(other.task_id), (e: LonghaulError) => e.code === "TASK_NOT_RERUNNABLE");
    await assert.rejects(
      lh.rerun(fourth.task_id, { from: "middle" as "start" }),
      (e: LonghaulError) => e.code === "VALIDATION_FAILED",
    );
    await lh.cancel(rerun.task_id);
    await lh.drain();
  });

  test("fetch records a signed webhook (exact bytes) and drain applies it: the job step ends", async () => {
    const { task_id } = await lh.submit({ type: "summarize", input: { text: "long text" } });
    await lh.drain();
    assert.equal(await status(task_id), "waiting");
    const jobId = provider.created.find((j) => j.startsWith(`job_${task_id}`));
    assert.ok(jobId);

    // Spacing kept as sent: the signature covers these bytes, not a re-serialisation.
    const body = `{ "id": "evt_1", "type": "job.succeeded",  "data": {"job_id": "${jobId}", "output": {"summary": "short"}} }`;
    const res = await lh.fetch(new Request("http://x/hooks/fake", signedHook("evt_1", body)));
    assert.equal(res.status, 200, await res.clone().text());
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    const again = await lh.fetch(new Request("http://x/hooks/fake", signedHook("evt_1", body)));
    assert.equal(again.status, 200);
    assert.equal((await again.json()).duplicate, true);

    await lh.drain();
    assert.equal(await status(task_id), "succeeded");
    assert.deepEqual((await lh.store.getTask("tn_default", task_id))?.task.output, { summary: "short" });
  });

  test("through fetch a wrong signature is 401 SIGNATURE_INVALID, as over HTTP, and a missing route 404", async () => {
    const body = JSON.stringify({ id: "evt_bad", type: "job.running", data: { job_id: "job_none" } });
    const res = await lh.fetch(
      new Request(
        "http://x/hooks/fake",
        signedHook("evt_bad", body, "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
      ),
    );
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.code, "SIGNATURE_INVALID");
    const tampered = signedHook("evt_bad", body);
    const changed = await lh.fetch(new Request("http://x/hooks/fake", { ...tampered, body: `${body} ` }));
    assert.equal(changed.status, 401);
    assert.equal((await changed.json()).error.code, "SIGNATURE_INVALID");
    const missing = await lh.fetch(new Request("http://x/v2/nothing?x=1"));
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, "NOT_FOUND");
  });

  test("fetch streams GET /v1/events as Server-Sent Events; canceling the body closes the stream", async () => {
    const { apiKey } = await import("../src/usecases/create-tenant.ts").then((m) =>
      m.addApiKey({ tenants: lh.store }, { tenantId: "tn_default" }),
    );
    const { task_id } = await lh.submit({ type: "double", input: { n: 2 } });
    const res = await lh.fetch(
      new Request(`http://x/v1/events?task_id=${task_id}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      }),
    );
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes("event: task.created")) {
      const { value, done } = await reader.read();
      assert.equal(done, false);
      text += new TextDecoder().decode(value);
    }
    assert.equal(lh.server.eventStreams.stats().streams, 1);
    await reader.cancel();
    await waitFor(() => lh.server.eventStreams.stats().streams === 0, 2000, "the stream to close");
    await lh.drain();
  });

  test("the Lambda adapter answers API Gateway v2 events: GET /healthz and a signed POST", async () => {
    const handler = toLambdaHandler(lh);
    const base = (method: string, rawPath: string): ApiGatewayV2Event =>
      ({
        version: "2.0",
        routeKey: "$default",
        rawPath,
        rawQueryString: "",
        headers: { host: "abc123.execute-api.eu-west-1.amazonaws.com", "user-agent": "curl/8.0" },
        requestContext: {
          accountId: "123456789012",
          apiId: "abc123",
          domainName: "abc123.execute-api.eu-west-1.amazonaws.com",
          http: {
            method,
            path: rawPath,
            protocol: "HTTP/1.1",
            sourceIp: "203.0.113.7",
            userAgent: "curl/8.0",
          },
          requestId: "req-1",
          stage: "$default",
          time: "01/Dec/2026:10:00:00 +0000",
          timeEpoch: 1_796_000_000_000,
        },
        isBase64Encoded: false,
      }) as ApiGatewayV2Event;

    const health = await handler(base("GET", "/healthz"));
    assert.equal(health.statusCode, 200);
    assert.equal(health.isBase64Encoded, false);
    assert.deepEqual(JSON.parse(health.body), { status: "ok", store: "ok" });

    const { task_id } = await lh.submit({ type: "summarize", input: { text: "lambda" } });
    await lh.drain();
    const jobId = provider.created.find((j) => j.startsWith(`job_${task_id}`));
    const body = JSON.stringify({
      id: "evt_lambda",
      type: "job.succeeded",
      data: { job_id: jobId, output: 7 },
    });
    const hook = signedHook("evt_lambda", body).headers as Record<string, string>;
    const post = await handler({
      ...base("POST", "/hooks/fake"),
      headers: { ...base("POST", "/hooks/fake").headers, ...hook },
      // API Gateway hands binary-safe bodies over in base64.
      body: Buffer.from(body).toString("base64"),
      isBase64Encoded: true,
    });
    assert.equal(post.statusCode, 200, post.body);
    assert.equal(JSON.parse(post.body).duplicate, false);
    await lh.drain();
    assert.equal(await status(task_id), "succeeded");

    const forged = await handler({
      ...base("POST", "/hooks/fake"),
      headers: { ...base("POST", "/hooks/fake").headers, ...hook },
      body: body.replace("7", "8"),
    });
    assert.equal(forged.statusCode, 401);
    assert.equal(JSON.parse(forged.body).error.code, "SIGNATURE_INVALID");
  });
});

describe("the default tenant of embedded calls", () => {
  test("the tenant option names (and creates) it; several tenants without it is CONFIG_INVALID", async () => {
    const tmp = tempDir();
    const url = `sqlite:${join(tmp.dir, "tenants.db")}`;
    const named = await createLonghaul({
      databaseUrl: url,
      tasks: [doubler],
      tenant: "tn_shop",
      logger: quietLog(),
    });
    const { task_id } = await named.submit({ type: "double", input: { n: 4 } });
    await named.drain();
    assert.equal((await named.store.getTask("tn_shop", task_id))?.task.output, 8);
    await named.store.ensureTenant({ id: "tn_other", name: "other", keyHash: "x" });
    await named.close();

    const unnamed = await createLonghaul({ databaseUrl: url, tasks: [doubler], logger: quietLog() });
    await assert.rejects(
      unnamed.submit({ type: "double", input: { n: 1 } }),
      (e: LonghaulError) => e.code === "CONFIG_INVALID" && /2 tenants/.test(e.message),
    );
    assert.equal((await unnamed.submit("tn_other", { type: "double", input: { n: 1 } })).created, true);
    await unnamed.close();
    tmp.cleanup();
  });

  test("drain under role api is refused", async () => {
    const tmp = tempDir();
    const api = await createLonghaul({
      databaseUrl: `sqlite:${join(tmp.dir, "api.db")}`,
      role: "api",
      logger: quietLog(),
    });
    await assert.rejects(api.drain(), (e: LonghaulError) => e.code === "CONFIG_INVALID");
    await api.close();
    tmp.cleanup();
  });
});

describe("fetch and the Lambda adapter keep repeated headers and bodies that are not text", () => {
  test("each value of a repeated header, Set-Cookie in cookies, bytes in base64", async () => {
    const tmp = tempDir();
    const lh = await createLonghaul({ databaseUrl: `sqlite:${join(tmp.dir, "h.db")}`, logger: quietLog() });
    lh.server.post("/test/echo", async (req, reply) => {
      reply.header("set-cookie", ["a=1; Path=/", "b=2; Path=/"]);
      reply.header("x-seen", [String(req.headers["x-multi"]), String(req.headers.cookie)]);
      reply.header("content-type", "application/octet-stream");
      return reply.send(Buffer.from([0, 255, 1, 254]));
    });
    const res = await lh.fetch(
      new Request("http://x/test/echo?q=1", {
        method: "POST",
        headers: [
          ["x-multi", "one"],
          ["x-multi", "two"],
          ["content-type", "application/json"],
        ],
        body: "{}",
      }),
    );
    assert.equal(res.status, 200);
    assert.deepEqual(res.headers.getSetCookie(), ["a=1; Path=/", "b=2; Path=/"]);
    assert.equal(res.headers.get("x-seen"), "one, two, undefined");
    assert.deepEqual([...new Uint8Array(await res.arrayBuffer())], [0, 255, 1, 254]);

    const out = await toLambdaHandler(lh)({
      rawPath: "/test/echo",
      rawQueryString: "q=1",
      headers: { "x-multi": "one,two", "content-type": "application/json" },
      cookies: ["s=1", "t=2"],
      body: "{}",
      requestContext: { http: { method: "POST", sourceIp: "198.51.100.4" } },
    });
    assert.equal(out.statusCode, 200);
    assert.deepEqual(out.cookies, ["a=1; Path=/", "b=2; Path=/"]);
    assert.equal(out.headers["x-seen"], "one,two, s=1; t=2");
    assert.equal(out.isBase64Encoded, true);
    assert.deepEqual([...Buffer.from(out.body, "base64")], [0, 255, 1, 254]);
    await lh.close();
    tmp.cleanup();
  });
});

test("only a worker node syncs SQLite's WAL on its event loop; a node that answers HTTP keeps the loop free", async () => {
  const dir = tempDir();
  const orders: Record<string, string[][]> = {};
  try {
    for (const role of ["all", "api", "worker"] as const) {
      const lh = await createLonghaul({
        databaseUrl: `sqlite:${join(dir.dir, `${role}.db`)}`,
        role,
        logger: quietLog(),
      });
      try {
        orders[role] = await loopFreeDuringSync(lh.store);
      } finally {
        await lh.close();
      }
    }
  } finally {
    dir.cleanup();
  }
  const free = Array(3).fill(["loop", "write"]);
  assert.deepEqual(orders.all, free);
  assert.deepEqual(orders.api, free);
  assert.deepEqual(orders.worker, Array(3).fill(["write", "loop"]));
});

test("a worker node answers its health probe and nothing of the API", async () => {
  const dir = tempDir();
  const lh = await createLonghaul({
    databaseUrl: `sqlite:${join(dir.dir, "worker.db")}`,
    role: "worker",
    tasks: [doubler],
    logger: quietLog(),
  });
  try {
    assert.equal((await lh.fetch(new Request("http://node/healthz"))).status, 200);
    const submit = await lh.fetch(
      new Request("http://node/v1/tasks", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer lh_anything" },
        body: JSON.stringify({ type: "double", input: { n: 1 } }),
      }),
    );
    assert.equal(submit.status, 404);
    assert.equal(
      (await lh.fetch(new Request("http://node/hooks/any", { method: "POST", body: "{}" }))).status,
      404,
    );
    // The embedded calls still work: the node is a worker, not a closed door.
    const { task_id } = await lh.submit({ type: "double", input: { n: 2 } });
    await lh.drain({ maxMs: 5000 });
    const done = await lh.get(task_id);
    assert.equal(done.status, "succeeded");
    assert.deepEqual(done.output, 4);
    assert.deepEqual(
      done.steps.map((s) => [s.id, s.status]),
      [["twice", "succeeded"]],
    );
  } finally {
    await lh.close();
    dir.cleanup();
  }
});

test("beside the API (role all), the worker claims a few items at a time while HTTP presses the loop", async () => {
  const dir = tempDir();
  // The loop's busy share and the gauge's windows are the test's; the requests are real.
  let busy = 0;
  let endWindow: () => void = () => {};
  const lh = await createLonghaul({
    databaseUrl: `sqlite:${join(dir.dir, "pressed.db")}`,
    tasks: [doubler],
    logger: quietLog(),
    pressureSignals: {
      busyShare: () => busy,
      everyWindow: (fn) => {
        endWindow = fn;
        return () => {};
      },
    },
  });
  const pressed = (lh.worker as unknown as { d: { httpPressed: () => boolean } }).d.httpPressed;
  const claims: { limit: number; pressed: boolean }[] = [];
  const claim = lh.store.claim.bind(lh.store);
  lh.store.claim = (owner, limit, leaseMs) => {
    claims.push({ limit, pressed: pressed() });
    return claim(owner, limit, leaseMs);
  };
  const url = await lh.listen({ port: 0, host: "127.0.0.1" });
  const runAll = async (n: number) => {
    const tasks = await Promise.all(
      Array.from({ length: n }, (_, i) => lh.submit({ type: "double", input: { n: i } })),
    );
    await waitFor(async () => {
      const all = await Promise.all(tasks.map((t) => lh.get(t.task_id)));
      return all.every((t) => t.status === "succeeded");
    }, 30_000);
  };
  let whilePressed: typeof claims = [];
  let afterwards: typeof claims = [];
  try {
    // Requests through the server's own socket, and a loop busy nearly all the window.
    for (let i = 0; i < 12; i++) await (await fetch(`${url}/healthz`)).arrayBuffer();
    busy = 0.95;
    endWindow();
    assert.equal(pressed(), true, "the worker reads the server's pressure");
    // Pressed until the next window ends: every claim of this batch is made while pressed.
    const before = claims.length;
    await runAll(100);
    whilePressed = claims.slice(before);
    // A window with no requests: no longer pressed.
    endWindow();
    assert.equal(pressed(), false);
    const next = claims.length;
    await runAll(100);
    afterwards = claims.slice(next);
  } finally {
    await lh.close();
    dir.cleanup();
  }
  assert.ok(whilePressed.length > 0, "the worker claimed while HTTP pressed the loop");
  for (const c of whilePressed) {
    assert.equal(c.pressed, true);
    assert.ok(c.limit <= YIELD_CLAIM, `a claim of ${c.limit} while pressed`);
  }
  assert.ok(
    afterwards.some((c) => !c.pressed && c.limit > YIELD_CLAIM),
    "once HTTP no longer presses, the worker claims for all its slots",
  );
});
