import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { defineTask } from "../src/core/task-type.ts";
import { type Provider, ProviderError } from "../src/providers/provider.ts";
import { captureLog, waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const ADMIN_KEY = "admin-key-for-metric-series-0123456789";

/** A provider that refuses every job for good: its task fails with PROVIDER_ERROR. */
const broken: Provider = {
  name: "broken",
  parseEvent() {
    throw new ProviderError("this provider sends no events", { retriable: false });
  },
  async create() {
    throw new ProviderError("this provider refuses every job", { retriable: false, status: 400 });
  },
};
const brokenJob = defineTask("broken.job", async (_input: unknown, step) =>
  step.job("refused", { provider: "broken", input: {} }),
);

/** A webhook receiver that refuses every delivery with a 500. */
async function refusingReceiver(): Promise<{ url: string; hits: () => number; close(): Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    hits++;
    res.writeHead(500).end("no");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/refuse`,
    hits: () => hits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The value of one series of the Prometheus text, or undefined when it is not there. */
function series(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries(
      [...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe("metrics and warn lines over a scripted run on HTTP and a SQLite file", () => {
  let stack: Stack;
  let rx: Awaited<ReturnType<typeof refusingReceiver>>;
  const captured = captureLog("info");
  let text = "";
  const warnLines = () => captured.lines.filter((l) => (l.level as number) >= 40);

  before(async () => {
    rx = await refusingReceiver();
    stack = await startStack({
      adminKey: ADMIN_KEY,
      logger: captured.log,
      taskTypes: [brokenJob],
      providers: [broken],
      outbound: { retry_schedule_s: [0, 0], allow_private_networks: true },
    });
    const endpoint = await stack.api("/v1/webhook-endpoints", {
      body: { url: rx.url, events: ["task.succeeded"] },
    });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));

    const ok = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "m" } } });
    const bad = await stack.api("/v1/tasks", { body: { type: "broken.job", input: {} } });
    await waitFor(async () => (await stack.api(`/v1/tasks/${ok.body.task_id}`)).body.status === "succeeded");
    await waitFor(async () => (await stack.api(`/v1/tasks/${bad.body.task_id}`)).body.status === "failed");
    // A work item that cannot run: dead after its one attempt.
    await stack.store.enqueue([{ kind: "dispatch", tenantId: null, payload: {}, maxAttempts: 1 }]);
    // A webhook with a signature made with another secret.
    const forged = await fetch(`${stack.url}/hooks/sim`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-request-id": "rid-forged-1",
        "webhook-id": "msg_forged",
        "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
        "webhook-signature": "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
      },
      body: '{"id":"evt_forged","type":"job.succeeded","data":{"job_id":"x"}}',
    });
    assert.equal(forged.status, 401);
    const deadDelivery = () =>
      stack.api(`/v1/webhook-endpoints/${endpoint.body.id}/deliveries`).then((r) => r.body.data);
    await waitFor(async () => (await deadDelivery()).some((d: { state: string }) => d.state === "dead"));
    await waitFor(() => warnLines().some((l) => l.msg === "work item dead after its last attempt"));
    // The first maintenance pass has run and scheduled the next one, an hour ahead.
    await waitFor(async () => {
      const stats = await stack.store.queueStats(Date.now());
      return stats.some((s) => s.kind === "maintenance" && s.depth === 1 && s.oldestDueAt === null);
    });
    const res = await fetch(`${stack.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    assert.equal(res.status, 200);
    text = await res.text();
  });
  after(async () => {
    await stack.close();
    await rx.close();
  });

  test("task outcomes and durations are counted by type and status", () => {
    for (const [type, status] of [
      ["demo.echo", "succeeded"],
      ["broken.job", "failed"],
    ] as const) {
      assert.equal(series(text, "longhaul_tasks_finished_total", { type, status }), 1, `${type} ${status}`);
      assert.equal(series(text, "longhaul_task_duration_seconds_count", { type, status }), 1);
      assert.ok(series(text, "longhaul_task_duration_seconds_sum", { type, status })! > 0);
    }
  });

  test("waits, provider errors, refusals, outbound attempts, dead deliveries and dead items are counted", () => {
    assert.equal(series(text, "longhaul_waits_started_total", { kind: "job" }), 2);
    assert.equal(series(text, "longhaul_provider_errors_total", { provider: "broken", op: "create" }), 1);
    assert.equal(
      series(text, "longhaul_webhook_refusals_total", { source: "sim", reason: "SIGNATURE_INVALID" }),
      1,
    );
    // retry_schedule_s [0, 0]: an attempt that is retried, then one after which it is dead.
    assert.equal(series(text, "longhaul_outbound_attempts_total", { outcome: "retry" }), 1);
    assert.equal(series(text, "longhaul_outbound_attempts_total", { outcome: "dead" }), 1);
    assert.equal(series(text, "longhaul_outbound_dead_total", {}), 1);
    assert.equal(series(text, "longhaul_work_items_dead_total", { kind: "dispatch" }), 1);
    // The series that were there before stay.
    assert.equal(series(text, "longhaul_tasks_submitted_total", { type: "demo.echo" }), 1);
    assert.ok(series(text, "longhaul_work_items_total", { kind: "advance", outcome: "done" })! > 0);
  });

  test("queue depth and the oldest due item's age are read per kind at scrape time", () => {
    for (const kind of ["advance", "dispatch", "deliver", "maintenance", "poll"]) {
      assert.notEqual(series(text, "longhaul_queue_depth", { kind }), undefined, kind);
      assert.notEqual(series(text, "longhaul_queue_oldest_due_age_seconds", { kind }), undefined, kind);
    }
    // The next maintenance pass is pending, an hour ahead: counted, not yet due.
    assert.equal(series(text, "longhaul_queue_depth", { kind: "maintenance" }), 1);
    assert.equal(series(text, "longhaul_queue_oldest_due_age_seconds", { kind: "maintenance" }), 0);
  });

  test("HTTP durations are labelled by the route's pattern, not the URL", () => {
    const count = (labels: Record<string, string>) =>
      series(text, "longhaul_http_request_duration_seconds_count", labels);
    assert.equal(count({ method: "POST", route: "/v1/tasks", status: "202" }), 2);
    assert.ok(count({ method: "GET", route: "/v1/tasks/:id", status: "200" })! >= 2);
    assert.equal(count({ method: "POST", route: "/hooks/:source", status: "401" }), 1);
    assert.doesNotMatch(text, /route="\/v1\/tasks\/t_/, "no task id in a label");
  });

  test("a refused webhook, a failed task, a dead item and a dead delivery each log at warn, without secrets or input", () => {
    const warn = warnLines();
    const refused = warn.find((l) => l.msg === "webhook refused");
    assert.ok(refused, "webhook refused");
    assert.deepEqual(
      [refused.source, refused.code, refused.reqId],
      ["sim", "SIGNATURE_INVALID", "rid-forged-1"],
    );
    const failed = warn.find((l) => l.msg === "task failed");
    assert.ok(failed, "task failed");
    assert.deepEqual(
      [failed.type, failed.code, typeof failed.taskId, typeof failed.tenantId],
      ["broken.job", "PROVIDER_ERROR", "string", "string"],
    );
    assert.equal(failed.input, undefined);
    assert.ok(warn.some((l) => l.msg === "work item dead after its last attempt" && l.kind === "dispatch"));
    const dead = warn.find((l) => l.msg === "outbound webhook delivery dead");
    assert.ok(dead, "outbound webhook delivery dead");
    assert.equal(dead.outcome, "dead");
    const all = JSON.stringify(warn);
    assert.doesNotMatch(all, /AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=/, "no signature");
    assert.doesNotMatch(all, /evt_forged/, "no body");
    assert.doesNotMatch(all, /whsec_/, "no secret");
  });

  test("the refused webhook is listed for the admin with its reason and request id, never its body", async () => {
    const res = await fetch(`${stack.url}/v1/admin/webhook-refusals?source=sim`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    assert.equal(res.status, 200);
    const page = (await res.json()) as { data: Record<string, unknown>[] };
    assert.equal(page.data.length, 1);
    const r = page.data[0]!;
    assert.deepEqual(
      [r.source, r.code, r.count, r.last_request_id],
      ["sim", "SIGNATURE_INVALID", 1, "rid-forged-1"],
    );
    assert.match(String(r.last_remote_address), /127\.0\.0\.1/);
    assert.doesNotMatch(JSON.stringify(page), /evt_forged|AAAA/);
  });
});

describe("request ids", () => {
  let stack: Stack;
  const captured = captureLog("info");
  before(async () => {
    stack = await startStack({ logger: captured.log });
  });
  after(() => stack.close());

  test("an incoming X-Request-Id is echoed, and an error body carries it", async () => {
    const r = await stack.api("/v1/tasks/t_missing", { headers: { "x-request-id": "caller-id-42" } });
    assert.equal(r.status, 404);
    assert.equal(r.headers.get("x-request-id"), "caller-id-42");
    assert.equal(r.body.error.request_id, "caller-id-42");
    assert.equal(r.body.error.code, "TASK_NOT_FOUND");
  });

  test("a request without one, or with one that is too long or not printable, gets a new ULID on every answer", async () => {
    const tries: Record<string, string>[] = [
      {},
      { "x-request-id": "x".repeat(129) },
      { "x-request-id": "a b" },
    ];
    for (const headers of tries) {
      const ok = await stack.api("/v1/tasks", { headers });
      assert.equal(ok.status, 200);
      assert.match(ok.headers.get("x-request-id") ?? "", /^req_[0-9A-HJKMNP-TV-Z]{26}$/);
    }
    const unrouted = await fetch(`${stack.url}/no/such/route`);
    const id = unrouted.headers.get("x-request-id");
    assert.match(id ?? "", /^req_/);
    assert.equal(((await unrouted.json()) as { error: { request_id: string } }).error.request_id, id);
    // Refused by the router before any hook runs: a broken percent-encoding.
    const broken = await fetch(`${stack.url}/v1/tasks/%zz`, { headers: { "x-request-id": "rid-bad-url" } });
    assert.equal(broken.status, 400);
    assert.equal(broken.headers.get("x-request-id"), "rid-bad-url");
    assert.equal(
      ((await broken.json()) as { error: { request_id: string } }).error.request_id,
      "rid-bad-url",
    );
    const a = await fetch(`${stack.url}/healthz`);
    const b = await fetch(`${stack.url}/healthz`);
    assert.notEqual(a.headers.get("x-request-id"), b.headers.get("x-request-id"));
  });

  test("the OpenAPI error body documents param and request_id", async () => {
    const doc = (await (await fetch(`${stack.url}/openapi.json`)).json()) as any;
    const body = doc.paths["/v1/tasks"].post.responses["4XX"].content["application/json"].schema;
    assert.equal(body.$ref, "#/components/schemas/ErrorBody");
    const error = doc.components.schemas.ErrorBody.properties.error;
    assert.deepEqual(Object.keys(error.properties), ["code", "message", "param", "request_id"]);
    assert.deepEqual(error.required, ["code", "message"]);
  });

  test("a validation error names the field at fault as param", async () => {
    const r = await stack.api("/v1/tasks", { body: { input: {} } });
    assert.equal(r.status, 400);
    assert.deepEqual([r.body.error.code, r.body.error.param], ["VALIDATION_FAILED", "type"]);
    const q = await stack.api("/v1/tasks?limit=0");
    assert.deepEqual([q.body.error.code, q.body.error.param], ["VALIDATION_FAILED", "limit"]);
  });

  test("the webhook path ahead of the router honours the id, answers it and logs it", async () => {
    const res = await fetch(`${stack.url}/hooks/sim`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "hook-rid-7" },
      body: "{}",
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("x-request-id"), "hook-rid-7");
    assert.equal(((await res.json()) as { error: { request_id: string } }).error.request_id, "hook-rid-7");
    const lines = await waitFor(() => {
      const mine = captured.lines.filter((l) => l.reqId === "hook-rid-7");
      return mine.some((l) => l.msg === "request completed") ? mine : null;
    });
    assert.ok(lines.some((l) => l.msg === "webhook refused" && l.code === "SIGNATURE_MISSING"));
  });
});
