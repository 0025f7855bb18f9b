import assert from "node:assert/strict";
import http, { type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { createLonghaul } from "../src/app.ts";
import { engineOptions } from "../src/cli/config.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { DEFAULT_LIMITS, resolveLimits } from "../src/core/limits.ts";
import { OptionSettings } from "../src/core/settings.ts";
import { checkSettings } from "../src/core/settings-check.ts";
import { defineTask } from "../src/core/task-type.ts";
import { FixedWindows } from "../src/http/rate-limits.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { quietLog, tempDir, waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: any;
}

/** One request over loopback from the local address `from` (127.0.0.x), so tests can be two clients. */
function request(
  url: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string; from?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(path, url),
      { method: opts.method ?? "GET", headers: opts.headers, localAddress: opts.from ?? "127.0.0.1" },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          text += c;
        });
        res.on("end", () => {
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {}
          resolve({ status: res.statusCode!, headers: res.headers, body });
        });
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** Asserts the stable 429 of a limit: the code, a message, and a Retry-After within the window. */
function assertLimited(r: Answer, code = "RATE_LIMITED", maxWaitS = 60): void {
  assert.equal(r.status, 429, JSON.stringify(r.body));
  assert.equal(r.body.error.code, code);
  assert.ok(r.body.error.message.length > 0);
  const wait = Number(r.headers["retry-after"]);
  assert.ok(
    Number.isInteger(wait) && wait >= 1 && wait <= maxWaitS,
    `Retry-After: ${r.headers["retry-after"]}`,
  );
}

async function secondTenant(stack: Stack): Promise<string> {
  const key = newApiKey();
  await stack.store.createTenant({ name: "second", keyHash: hashApiKey(key) });
  return key;
}

const ADMIN_KEY = "admin-key-for-limits-0123456789abcdef";

describe("API rate limit per tenant", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ adminKey: ADMIN_KEY, limits: { api_per_min: 3, unauthenticated_per_min: 2 } });
  });
  after(() => stack.close());

  test("past api_per_min a tenant gets 429 RATE_LIMITED with Retry-After; every key of it shares the count; another tenant is unaffected", async () => {
    const other = await secondTenant(stack);
    // A second key of the same tenant: the limit follows the tenant, not the key.
    const second = newApiKey();
    await stack.store.addApiKey(stack.tenantId, hashApiKey(second), "…test");
    for (const key of [stack.key, second, stack.key]) {
      const ok = await request(stack.url, "/v1/tasks", { headers: bearer(key) });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers["x-ratelimit-limit"], "3");
    }
    assertLimited(await request(stack.url, "/v1/tasks", { headers: bearer(second) }));
    const sse = await request(stack.url, "/v1/events", { headers: bearer(stack.key) });
    assertLimited(sse);
    assert.equal((await request(stack.url, "/v1/tasks", { headers: bearer(other) })).status, 200);
  });

  test("made-up keys share one bucket per address: past unauthenticated_per_min they get 429, from another address 401", async () => {
    for (let i = 0; i < 2; i++) {
      const r = await request(stack.url, "/v1/tasks", {
        headers: bearer(`lh_made_up_${i}`),
        from: "127.0.0.3",
      });
      assert.equal(r.status, 401);
    }
    assertLimited(
      await request(stack.url, "/v1/tasks", { headers: bearer("lh_made_up_2"), from: "127.0.0.3" }),
    );
    assertLimited(await request(stack.url, "/v1/tasks", { from: "127.0.0.3" }));
    const elsewhere = await request(stack.url, "/v1/tasks", { headers: bearer("lh_x"), from: "127.0.0.4" });
    assert.equal(elsewhere.status, 401);
    assert.equal(elsewhere.body.error.code, "UNAUTHORIZED");
    // A valid key from the limited address is counted against its tenant, not refused.
    const valid = await request(stack.url, "/v1/usage", {
      headers: bearer(await secondTenant(stack)),
      from: "127.0.0.3",
    });
    assert.equal(valid.status, 200);
  });

  test("wrong admin keys count against the address too; the right one still works", async () => {
    for (let i = 0; i < 2; i++) {
      const r = await request(stack.url, "/v1/admin/tenants", {
        headers: bearer(`guess-${i}`),
        from: "127.0.0.5",
      });
      assert.equal(r.status, 401);
    }
    assertLimited(
      await request(stack.url, "/v1/admin/tenants", { headers: bearer("guess-2"), from: "127.0.0.5" }),
    );
    assert.equal((await request(stack.url, "/v1/admin/tenants", { headers: bearer(ADMIN_KEY) })).status, 200);
  });
});

describe("rate limits on the public routes, per client address", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ limits: { hooks_per_min: 2, callbacks_per_min: 2, approvals_per_min: 2 } });
  });
  after(() => stack.close());

  const json = { "content-type": "application/json" };

  test("POST /hooks/:source past hooks_per_min is 429 for that source and address only", async () => {
    for (let i = 0; i < 2; i++) {
      const r = await request(stack.url, "/hooks/sim", { method: "POST", headers: json, body: "{}" });
      assert.equal(r.status, 401, "unsigned deliveries count too");
    }
    assertLimited(await request(stack.url, "/hooks/sim", { method: "POST", headers: json, body: "{}" }));
    // The router's route (a `%` in the name) counts against the same limit as the path ahead of it.
    assertLimited(await request(stack.url, "/hooks/%73im", { method: "POST", headers: json, body: "{}" }));
    // Another source from the same address has its own count.
    const unknown = await request(stack.url, "/hooks/elsewhere", {
      method: "POST",
      headers: json,
      body: "{}",
    });
    assert.equal(unknown.status, 404);
    // The same source from another address is unaffected.
    const other = await request(stack.url, "/hooks/sim", {
      method: "POST",
      headers: json,
      body: "{}",
      from: "127.0.0.2",
    });
    assert.equal(other.status, 401);
  });

  test("/v1/callbacks/:token and /v1/approvals/:token past their limits are 429 for that address only", async () => {
    for (const [path, method] of [
      ["/v1/callbacks/v1.not-a-token", "POST"],
      ["/v1/approvals/v1.not-a-token", "GET"],
    ] as const) {
      for (let i = 0; i < 2; i++) {
        const r = await request(stack.url, path, {
          method,
          headers: json,
          body: method === "POST" ? "{}" : "",
        });
        assert.equal(r.status, 401, `${path}: ${JSON.stringify(r.body)}`);
      }
      assertLimited(
        await request(stack.url, path, { method, headers: json, body: method === "POST" ? "{}" : "" }),
      );
      const other = await request(stack.url, path, {
        method,
        headers: json,
        body: method === "POST" ? "{}" : "",
        from: "127.0.0.2",
      });
      assert.equal(other.status, 401);
    }
  });
});

/** Opens `GET /v1/events` and keeps it open; non-200 answers are read whole. */
function openStream(
  url: string,
  key: string,
): Promise<{
  status: number;
  headers: IncomingHttpHeaders;
  body: any;
  req: ClientRequest;
  res: IncomingMessage;
}> {
  return new Promise((resolve, reject) => {
    const req = http.get(new URL("/v1/events", url), { headers: bearer(key) }, (res) => {
      if (res.statusCode === 200) return resolve({ status: 200, headers: res.headers, body: null, req, res });
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        text += c;
      });
      res.on("end", () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text), req, res }),
      );
    });
    req.on("error", reject);
  });
}

describe("open SSE streams per tenant", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ limits: { sse_streams_per_tenant: 2 } });
  });
  after(() => stack.close());

  test("a stream past sse_streams_per_tenant gets 429 TOO_MANY_STREAMS with Retry-After; another tenant is unaffected; closing one frees a slot", async () => {
    const a = await openStream(stack.url, stack.key);
    const b = await openStream(stack.url, stack.key);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    const third = await openStream(stack.url, stack.key);
    assertLimited(third, "TOO_MANY_STREAMS");
    const other = await openStream(stack.url, await secondTenant(stack));
    assert.equal(other.status, 200);

    a.req.destroy();
    // The server sees the close a moment later; then the slot is free again.
    const again = await waitFor(async () => {
      const s = await openStream(stack.url, stack.key);
      if (s.status === 200) return s;
      assert.equal(s.body.error.code, "TOO_MANY_STREAMS");
      return null;
    });
    assertLimited(await openStream(stack.url, stack.key), "TOO_MANY_STREAMS");
    for (const s of [b, other, again]) s.req.destroy();
  });
});

describe("webhook endpoints per tenant", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({
      limits: { webhook_endpoints_per_tenant: 2 },
      outbound: { allow_private_networks: true },
    });
  });
  after(() => stack.close());

  test("creating one past webhook_endpoints_per_tenant is 409 LIMIT_REACHED until one is deleted; another tenant is unaffected", async () => {
    const create = (key: string) =>
      request(stack.url, "/v1/webhook-endpoints", {
        method: "POST",
        headers: { ...bearer(key), "content-type": "application/json" },
        body: JSON.stringify({ url: "http://127.0.0.1:9/hooks" }),
      });
    const first = await create(stack.key);
    assert.equal(first.status, 201);
    assert.equal((await create(stack.key)).status, 201);
    const refused = await create(stack.key);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "LIMIT_REACHED");
    assert.match(refused.body.error.message, /delete one/);
    assert.equal((await stack.api("/v1/webhook-endpoints")).body.data.length, 2);
    assert.equal((await create(await secondTenant(stack))).status, 201);
    const del = await stack.api(`/v1/webhook-endpoints/${first.body.id}`, { method: "DELETE" });
    assert.equal(del.status, 204);
    assert.equal((await create(stack.key)).status, 201);
  });
});

describe("signal retention", () => {
  const gated = defineTask("limits.gated-signal", async (_input: unknown, step) => {
    await step.callback("go", { timeout: "1h" });
    return step.waitForEvent("paid", { match: { event: "limits.paid", data: { id: 7 } }, timeout: "1h" });
  });
  let stack: Stack;
  let dbPath: string;
  const tmp = tempDir();
  before(async () => {
    dbPath = join(tmp.dir, "longhaul.db");
    stack = await startStack({ taskTypes: [gated], dbPath, limits: { signal_retention_s: 0.2 } });
  });
  after(async () => {
    await stack.close();
    tmp.cleanup();
  });

  const stepOf = async (taskId: string, stepId: string) => {
    const t = await stack.api(`/v1/tasks/${taskId}`);
    return t.body.steps.find((s: { id: string }) => s.id === stepId) ?? null;
  };

  test("the maintenance pass prunes signals past signal_retention_s, and a waitForEvent registered after no longer sees them", async () => {
    const submitted = await stack.api("/v1/tasks", { body: { type: "limits.gated-signal", input: {} } });
    const taskId = submitted.body.task_id;
    const go = await waitFor(async () => (await stepOf(taskId, "go"))?.callback_url);
    const sent = await stack.api("/v1/signals", { body: { name: "limits.paid", data: { id: 7 } } });
    assert.equal(sent.status, 202);
    assert.equal(sent.body.matched, 0);

    const db = new Database(dbPath, { readonly: true });
    const signals = () => (db.prepare("SELECT count(*) AS n FROM signals").get() as { n: number }).n;
    assert.equal(signals(), 1);
    // A maintenance pass of its own, now (the worker's own runs hourly).
    await waitFor(async () => {
      const now = Date.now();
      await stack.store.enqueue([
        { kind: "maintenance", tenantId: null, payload: {}, runAt: now, dedupeKey: `test-${now}` },
      ]);
      await new Promise((r) => setTimeout(r, 100));
      return signals() === 0;
    });
    db.close();

    const posted = await fetch(go, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json" },
    });
    assert.equal(posted.status, 200);
    const paid = await waitFor(async () => stepOf(taskId, "paid"));
    assert.equal(paid.status, "waiting", "the pruned signal must not satisfy a wait registered after it");
    const again = await stack.api("/v1/signals", { body: { name: "limits.paid", data: { id: 7 } } });
    assert.equal(again.body.matched, 1);
    await waitFor(async () => (await stack.api(`/v1/tasks/${taskId}`)).body.status === "succeeded");
  });
});

describe("limits configuration", () => {
  test("defaults fill in what is not given; 0 turns a limit off", () => {
    assert.deepEqual(resolveLimits(undefined), DEFAULT_LIMITS);
    const l = resolveLimits({ api_per_min: 0, sse_streams_per_tenant: 5 });
    assert.equal(l.api_per_min, 0);
    assert.equal(l.sse_streams_per_tenant, 5);
    assert.equal(l.webhook_endpoints_per_tenant, DEFAULT_LIMITS.webhook_endpoints_per_tenant);
  });

  test("an unknown key or a bad value is CONFIG_INVALID naming the key", () => {
    for (const [bad, named] of [
      [{ api_per_minute: 5 }, "limits.api_per_minute"],
      [{ api_per_min: -1 }, "limits.api_per_min"],
      [{ hooks_per_min: 1.5 }, "limits.hooks_per_min"],
      [{ sse_streams_per_tenant: "10" }, "limits.sse_streams_per_tenant"],
      [{ signal_retention_s: 0 }, "limits.signal_retention_s"],
      [{ schema_timeout_s: 0 }, "limits.schema_timeout_s"],
      ["fast", "limits"],
    ] as const) {
      assert.throws(
        () => checkSettings(OptionSettings, { limits: bad }),
        (e: unknown) =>
          e instanceof LonghaulError && e.code === "CONFIG_INVALID" && e.message.includes(named),
      );
    }
  });

  test("the config file's limits block reaches the server", async () => {
    const tmp = tempDir();
    const store = new SqliteStore({ path: join(tmp.dir, "longhaul.db") });
    const key = newApiKey();
    await store.migrate();
    await store.createTenant({ name: "t", keyHash: hashApiKey(key) });
    await assert.rejects(
      createLonghaul({ store, logger: quietLog(), ...engineOptions({ limits: { api_per_min: -5 } }) }),
      (e: unknown) => e instanceof LonghaulError && e.code === "CONFIG_INVALID",
    );
    const app = await createLonghaul({
      store,
      role: "api",
      logger: quietLog(),
      ...engineOptions({ limits: { api_per_min: 1 } }),
    });
    const url = await app.listen({ port: 0 });
    try {
      assert.equal((await request(url, "/v1/tasks", { headers: bearer(key) })).status, 200);
      assertLimited(await request(url, "/v1/tasks", { headers: bearer(key) }));
    } finally {
      await app.close();
      tmp.cleanup();
    }
  });
});

test("FixedWindows counts per key in fixed windows and forgets the least recently counted key past its size", () => {
  const w = new FixedWindows(2, 60_000, 2);
  assert.deepEqual(w.hit("a", 0), { limit: 2, remaining: 1, resetS: 60, exceeded: false });
  assert.deepEqual(w.hit("a", 30_000), { limit: 2, remaining: 0, resetS: 30, exceeded: false });
  assert.deepEqual(w.hit("a", 59_000), { limit: 2, remaining: 0, resetS: 1, exceeded: true });
  // The window ends 60 s after its first request; the next one starts a new window.
  assert.deepEqual(w.hit("a", 60_000), { limit: 2, remaining: 1, resetS: 60, exceeded: false });
  w.hit("b", 60_000);
  w.hit("a", 60_001);
  // A third key evicts the least recently counted one (b), never the one just counted.
  w.hit("c", 60_002);
  assert.equal(w.hit("b", 60_003).remaining, 1, "b starts over");
  assert.equal(w.hit("c", 60_004).remaining, 0, "c was kept");
});

describe("API reads and writes counted apart, sized for honest use", () => {
  // The defaults scaled down 100 times, with the traffic they are sized for scaled the same:
  // 5000 submits and 3000 tasks polled once a second for a minute. All of it lands in one
  // window here, which is harder on the limiter than the same traffic spread over a minute.
  const SCALE = 100;
  const SUBMITS = 5000 / SCALE;
  const POLLS = (3000 / SCALE) * 60;
  let stack: Stack;
  before(async () => {
    stack = await startStack({
      taskTypes: [defineTask("limits.noop", async () => 1)],
      limits: {
        api_reads_per_min: DEFAULT_LIMITS.api_reads_per_min / SCALE,
        api_writes_per_min: DEFAULT_LIMITS.api_writes_per_min / SCALE,
      },
    });
  });
  after(() => stack.close());

  test("a tenant submitting and polling at the documented honest rate gets no 429; past a limit the 429 names it and carries Retry-After and RateLimit-*", async () => {
    const ids: string[] = [];
    for (let i = 0; i < SUBMITS; i++) {
      const r = await request(stack.url, "/v1/tasks", {
        method: "POST",
        headers: { ...bearer(stack.key), "content-type": "application/json" },
        body: JSON.stringify({ type: "limits.noop", input: {} }),
      });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      ids.push(r.body.task_id);
    }
    for (let i = 0; i < POLLS; i++) {
      const r = await request(stack.url, `/v1/tasks/${ids[i % ids.length]}`, { headers: bearer(stack.key) });
      assert.equal(r.status, 200, `poll ${i}: ${JSON.stringify(r.body)}`);
    }
    // Reads past their limit: the 429 says which limit and when it resets.
    let limited: Answer | undefined;
    for (let i = 0; i <= DEFAULT_LIMITS.api_reads_per_min / SCALE && !limited; i++) {
      const r = await request(stack.url, `/v1/tasks/${ids[0]}`, { headers: bearer(stack.key) });
      if (r.status === 429) limited = r;
    }
    assert.ok(limited, "reads were limited");
    assertLimited(limited);
    assert.match(limited.body.error.message, /api_reads_per_min/);
    assert.match(limited.body.error.message, /resets in \d+ s/);
    assert.equal(limited.headers["ratelimit-limit"], String(DEFAULT_LIMITS.api_reads_per_min / SCALE));
    assert.equal(limited.headers["ratelimit-remaining"], "0");
    assert.ok(Number(limited.headers["ratelimit-reset"]) >= 1);
    assert.equal(limited.headers["ratelimit-policy"], `${DEFAULT_LIMITS.api_reads_per_min / SCALE};w=60`);
    // Writes are counted apart: the tenant still submits.
    const submit = await request(stack.url, "/v1/tasks", {
      method: "POST",
      headers: { ...bearer(stack.key), "content-type": "application/json" },
      body: JSON.stringify({ type: "limits.noop", input: {} }),
    });
    assert.equal(submit.status, 202);
  });

  test("api_per_min, deprecated, is the value of whichever of api_reads_per_min and api_writes_per_min is not given", () => {
    const l = resolveLimits({ api_per_min: 7, api_writes_per_min: 3 });
    assert.equal(l.api_reads_per_min, 7);
    assert.equal(l.api_writes_per_min, 3);
    assert.ok(DEFAULT_LIMITS.api_reads_per_min >= 3000 * 60, "3000 tasks polled once a second");
    assert.ok(DEFAULT_LIMITS.api_writes_per_min >= 5000, "5000 submits in one minute");
  });
});
