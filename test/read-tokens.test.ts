import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import WebSocket from "ws";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask } from "../src/core/task-type.ts";
import { redactCapabilityUrls } from "../src/http/log-redaction.ts";
import { Keyring } from "../src/tokens/keyring.ts";
import { mintReadToken, verifyReadToken } from "../src/tokens/read-token.ts";
import { mintToken, verifyToken } from "../src/tokens/token.ts";
import { captureLog, waitFor } from "./helpers.ts";
import { writeRoutes } from "./route-table.ts";
import { type Stack, startStack } from "./stack.ts";

const quick = defineTask("read.quick", async (_input: unknown, step) => {
  await step.run("a", () => 1);
  return { ok: true };
});
const waiting = defineTask("read.waiting", async (_input, step) =>
  step.callback<unknown>("cb", { timeout: "1h" }),
);

const KEYRING = Keyring.from([{ id: "k1", secret: "test-secret-0123456789abcdef0123456789" }]);
const NOW = Date.UTC(2026, 0, 1);

test("a read token names a task or a user, verifies until its expiry, and neither kind of token passes for the other", () => {
  const task = mintReadToken(KEYRING, {
    tenantId: "ten_a",
    scope: { taskId: "t_1" },
    expiresAt: NOW + 60_000,
  });
  assert.deepEqual(verifyReadToken(KEYRING, task, NOW), {
    keyId: "k1",
    tenantId: "ten_a",
    scope: { taskId: "t_1" },
    expiresAt: NOW + 60_000,
  });
  const user = mintReadToken(KEYRING, {
    tenantId: "ten_a",
    scope: { userId: "u_9" },
    expiresAt: NOW + 60_000,
  });
  assert.deepEqual(verifyReadToken(KEYRING, user, NOW).scope, { userId: "u_9" });
  assert.throws(() => verifyReadToken(KEYRING, task, NOW + 60_000), { code: "TOKEN_EXPIRED" });
  assert.throws(
    () => verifyReadToken(KEYRING, `${task.slice(0, -1)}${task.endsWith("A") ? "B" : "A"}`, NOW),
    {
      code: "TOKEN_INVALID",
    },
  );
  assert.throws(() => verifyReadToken(KEYRING, task.slice(0, -3), NOW), { code: "TOKEN_MALFORMED" });
  // A read token opens no wait, and a callback link's token reads nothing.
  assert.throws(() => verifyToken(KEYRING, task, NOW), { code: "TOKEN_SCOPE" });
  const callback = mintToken(KEYRING, {
    tenantId: "ten_a",
    taskId: "t_1",
    stepId: "cb",
    attempt: 1,
    purpose: "callback",
    expiresAt: NOW + 60_000,
  });
  assert.throws(() => verifyReadToken(KEYRING, callback, NOW), { code: "TOKEN_SCOPE" });
});

test("a token in a ?token= query is redacted from log lines", () => {
  assert.equal(
    redactCapabilityUrls("GET /v1/events?task_id=t_1&token=v1.abc.def&x=1"),
    "GET /v1/events?task_id=t_1&token=[redacted]&x=1",
  );
});

describe("read tokens over HTTP", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ taskTypes: [quick, waiting] });
  });
  after(() => stack.close());

  const submit = async (type: string, userId?: string): Promise<string> => {
    const r = await stack.api("/v1/tasks", {
      method: "POST",
      body: { type, input: {}, ...(userId ? { user_id: userId } : {}) },
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.task_id;
  };
  const mint = async (scope: Record<string, string>, ttl?: number) => {
    const r = await stack.api("/v1/tokens", {
      method: "POST",
      body: { scope, ...(ttl === undefined ? {} : { ttl }) },
    });
    return r;
  };
  const asReader = (path: string, token: string, init: { method?: string; body?: string } = {}) =>
    fetch(`${stack.url}${path}`, {
      method: init.method ?? "GET",
      headers: {
        authorization: `Bearer ${token}`,
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: init.body,
    }).then(async (r) => ({ status: r.status, body: (await r.json().catch(() => null)) as any }));

  test("POST /v1/tokens answers {token, expires_at, scope}; the ttl defaults to 900 s and is bounded", async () => {
    const id = await submit("read.quick");
    const r = await mint({ task_id: id });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(r.body.scope, { task_id: id });
    const ttl = (Date.parse(r.body.expires_at) - Date.now()) / 1000;
    assert.ok(ttl > 890 && ttl <= 900, `ttl ${ttl}`);
    assert.equal(r.headers.get("cache-control"), "no-store");
    for (const bad of [0, 59, 86_401, 1.5]) {
      assert.equal((await mint({ task_id: id }, bad)).body.error.code, "VALIDATION_FAILED", `ttl ${bad}`);
    }
    assert.equal((await mint({ task_id: "t_nope" })).body.error.code, "TASK_NOT_FOUND");
    assert.equal((await mint({ task_id: id, user_id: "u" } as never)).status, 400);
  });

  test("a task's token reads that task (without its wait links) and is refused on another task with TOKEN_SCOPE", async () => {
    const id = await submit("read.waiting");
    const other = await submit("read.quick");
    const { token } = (await mint({ task_id: id })).body;
    await waitFor(async () => (await stack.api(`/v1/tasks/${id}`)).body.status === "waiting");
    const byKey = await stack.api(`/v1/tasks/${id}`);
    assert.ok(byKey.body.steps.some((s: any) => typeof s.callback_url === "string"));
    const read = await asReader(`/v1/tasks/${id}`, token);
    assert.equal(read.status, 200);
    assert.equal(read.body.id ?? read.body.task_id, byKey.body.id ?? byKey.body.task_id);
    assert.ok(
      read.body.steps.every((s: any) => s.callback_url === undefined),
      "a read token hands out no callback link",
    );
    const byQuery = await fetch(`${stack.url}/v1/tasks/${id}?token=${token}`);
    assert.equal(byQuery.status, 200);
    for (const path of [`/v1/tasks/${other}`, `/v1/tasks/t_nope`, `/v1/events?task_id=${other}`]) {
      const r = await asReader(path, token);
      assert.equal(r.status, 403, path);
      assert.equal(r.body.error.code, "TOKEN_SCOPE", path);
    }
    // Reads that are not the task: the list, the timeline, usage.
    for (const path of ["/v1/tasks", "/v1/usage", `/v1/tasks/${id}/timeline`]) {
      assert.equal((await asReader(path, token)).body?.error?.code, "TOKEN_SCOPE", path);
    }
  });

  test("every non-GET route under /v1 in the route table refuses a read token", async () => {
    const id = await submit("read.quick");
    const { token } = (await mint({ task_id: id })).body;
    const routes = writeRoutes(stack);
    assert.ok(
      routes.some((r) => r.url === "/v1/tokens" && r.method === "POST"),
      JSON.stringify(routes),
    );
    assert.ok(routes.some((r) => r.url === "/v1/tasks" && r.method === "POST"));
    assert.ok(routes.some((r) => r.url === "/v1/webhook-endpoints/:id/deliveries/:delivery_id/replay"));
    assert.ok(routes.length >= 12, JSON.stringify(routes));
    for (const { method, url } of routes) {
      // Path parameters get the task's id, and a token parameter the read token itself.
      const path = url.replace(/:token\b/g, token).replace(/:[a-z_]+/g, id);
      const r = await asReader(path, token, { method, body: "{}" });
      assert.ok(r.status === 401 || r.status === 403, `${method} ${url}: ${r.status}`);
      // The admin routes take only the admin key: to them a read token is a wrong one.
      const code = url.startsWith("/v1/admin/") ? "UNAUTHORIZED" : "TOKEN_SCOPE";
      assert.equal(r.body?.error?.code, code, `${method} ${url}: ${JSON.stringify(r.body)}`);
    }
    // Nothing was written: the task is as it was, and no second token came of it.
    assert.equal((await stack.api(`/v1/tasks/${id}`)).status, 200);
  });

  test("expired, tampered and made-up tokens are refused with their codes", async () => {
    const id = await submit("read.quick");
    const { token } = (await mint({ task_id: id })).body;
    const tampered = `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`;
    assert.equal((await asReader(`/v1/tasks/${id}`, tampered)).body.error.code, "TOKEN_INVALID");
    assert.equal((await asReader(`/v1/tasks/${id}`, token.slice(0, -5))).body.error.code, "TOKEN_MALFORMED");
    const expired = mintReadToken(stack.app.keyring, {
      tenantId: stack.tenantId,
      scope: { taskId: id },
      expiresAt: Date.now() - 1000,
    });
    const r = await asReader(`/v1/tasks/${id}`, expired);
    assert.equal(r.status, 410);
    assert.equal(r.body.error.code, "TOKEN_EXPIRED");
  });

  test("another tenant's token opens none of this tenant's tasks, and that tenant cannot mint one for them", async () => {
    const id = await submit("read.quick");
    const key = newApiKey();
    await stack.store.createTenant({ name: "other", keyHash: hashApiKey(key) });
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const minted = await fetch(`${stack.url}/v1/tokens`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ scope: { task_id: id } }),
    });
    assert.equal(minted.status, 404);
    const theirs = await fetch(`${stack.url}/v1/tokens`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ scope: { user_id: "u_shared" } }),
    }).then((r) => r.json() as Promise<any>);
    const mine = await submit("read.quick", "u_shared");
    for (const path of [`/v1/tasks/${mine}`, `/v1/tasks/${id}`, `/v1/events?task_id=${mine}`]) {
      const r = await asReader(path, theirs.token);
      assert.equal(r.body.error.code, "TOKEN_SCOPE", path);
    }
  });

  test("a user's token reads the tasks submitted with that user_id, and no other", async () => {
    const mine = await submit("read.quick", "u_ana");
    const theirs = await submit("read.quick", "u_bob");
    const { token } = (await mint({ user_id: "u_ana" })).body;
    assert.equal((await asReader(`/v1/tasks/${mine}`, token)).status, 200);
    assert.equal((await asReader(`/v1/tasks/${theirs}`, token)).body.error.code, "TOKEN_SCOPE");
    // A stream of a user's token names one of the user's tasks.
    assert.equal((await asReader("/v1/events", token)).body.error.code, "TOKEN_SCOPE");
  });

  test("GET /v1/events/ws follows a task with its read token until task.succeeded, and resumes after last_event_id", async () => {
    const id = await submit("read.quick");
    const { token } = (await mint({ task_id: id })).body;
    const follow = (query: string) =>
      new Promise<Array<{ seq: number; type: string; task_id: string }>>((resolve, reject) => {
        const got: Array<{ seq: number; type: string; task_id: string }> = [];
        const ws = new WebSocket(`${stack.url.replace("http", "ws")}/v1/events/ws?${query}`);
        ws.on("message", (m) => {
          const e = JSON.parse(String(m));
          got.push(e);
          if (e.type === "task.succeeded") {
            ws.close();
            resolve(got);
          }
        });
        ws.on("error", reject);
      });
    const all = await follow(`token=${token}`);
    assert.ok(all.every((e) => e.task_id === id));
    assert.equal(all[0]!.type, "task.created");
    const resumed = await follow(`token=${token}&last_event_id=${all[1]!.seq}`);
    assert.deepEqual(
      resumed.map((e) => e.seq),
      all.slice(2).map((e) => e.seq),
    );
    // An API key in the header works too; a token for another task is refused before the upgrade.
    const other = await submit("read.quick");
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(
        `${stack.url.replace("http", "ws")}/v1/events/ws?task_id=${other}&token=${token}`,
      );
      ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.on("open", () => resolve(101));
      ws.on("error", () => {});
    });
    assert.equal(refused, 403);
    const keyed = await new Promise<string>((resolve, reject) => {
      const ws = new WebSocket(`${stack.url.replace("http", "ws")}/v1/events/ws?task_id=${other}`, {
        headers: { authorization: `Bearer ${stack.key}` },
      });
      ws.on("message", (m) => {
        const e = JSON.parse(String(m));
        if (e.type === "task.succeeded") {
          ws.close();
          resolve(e.task_id);
        }
      });
      ws.on("error", reject);
    });
    assert.equal(keyed, other);
  });
});

test("a read token sent as ?token= or as a Bearer header is never written to the log", async () => {
  const { lines, log } = captureLog("info");
  const stack = await startStack({ taskTypes: [quick], logger: log });
  try {
    const id = (await stack.api("/v1/tasks", { method: "POST", body: { type: "read.quick", input: {} } }))
      .body.task_id;
    const { token } = (await stack.api("/v1/tokens", { method: "POST", body: { scope: { task_id: id } } }))
      .body;
    assert.equal((await fetch(`${stack.url}/v1/tasks/${id}?token=${token}`)).status, 200);
    assert.equal((await fetch(`${stack.url}/v1/tasks?token=${token}`)).status, 403);
    await fetch(`${stack.url}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${token}` } });
    const text = lines.map((l) => JSON.stringify(l)).join("\n");
    assert.ok(text.includes("token=[redacted]"), "the requests were logged, their token redacted");
    assert.ok(!text.includes(token), "no log line holds the token");
    assert.ok(!text.includes(token.split(".")[2]!), "nor its signature");
  } finally {
    await stack.close();
  }
});
