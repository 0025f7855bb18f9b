import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createLonghaul } from "../src/app.ts";
import { freePort, quietLog, waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const ADMIN_KEY = "admin-key-for-metrics-0123456789";
let stack: Stack;
before(async () => {
  stack = await startStack({ adminKey: ADMIN_KEY });
});
after(() => stack.close());

test("GET /metrics counts submitted tasks, received webhooks and handled work in Prometheus format", async () => {
  const r = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "m" } } });
  await waitFor(async () => (await stack.api(`/v1/tasks/${r.body.task_id}`)).body.status === "succeeded");
  const res = await fetch(`${stack.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /text\/plain/);
  const text = await res.text();
  assert.match(text, /longhaul_tasks_submitted_total\{type="demo.echo"\} 1/);
  assert.match(text, /longhaul_webhooks_received_total\{source="sim",result="accepted"\} 2/);
  assert.match(text, /longhaul_work_items_total\{kind="advance",outcome="done"\} \d+/);
  assert.match(text, /longhaul_work_item_duration_seconds_bucket/);
  assert.match(text, /longhaul_process_cpu_seconds_total/);
});

test("GET /metrics on the API address wants the admin key; a tenant key or none is refused", async () => {
  const tries: Record<string, string>[] = [
    {},
    { authorization: `Bearer ${stack.key}` },
    { authorization: "Bearer wrong" },
  ];
  for (const headers of tries) {
    const res = await fetch(`${stack.url}/metrics`, { headers });
    assert.equal(res.status, 401);
    const body = (await res.json()) as { error: { code: string } };
    assert.equal(body.error.code, "UNAUTHORIZED");
  }
});

test("without an admin key /metrics is off on the API address, and served on metrics.listen when set", async () => {
  const port = await freePort();
  const s = await startStack({ metrics: { listen: `127.0.0.1:${port}` } });
  try {
    const closed = await fetch(`${s.url}/metrics`);
    assert.equal(closed.status, 401);
    assert.match(((await closed.json()) as { error: { message: string } }).error.message, /metrics\.listen/);
    assert.equal(s.app.metricsUrl, `http://127.0.0.1:${port}/metrics`);
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /longhaul_process_cpu_seconds_total/);
    assert.equal((await fetch(`http://127.0.0.1:${port}/v1/tasks`)).status, 404);
  } finally {
    await s.close();
  }
  await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`), "the metrics listener closes with the app");
});

test("metrics.public serves /metrics on the API address without a key, as before", async () => {
  const s = await startStack({ metrics: { public: true } });
  try {
    const res = await fetch(`${s.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /longhaul_tasks_submitted_total/);
  } finally {
    await s.close();
  }
});

test("a metrics.listen that is not host:port is refused at start", async () => {
  await assert.rejects(createLonghaul({ logger: quietLog(), metrics: { listen: "9464" } }), {
    code: "CONFIG_INVALID",
  });
});

test("GET /openapi.json describes the API", async () => {
  const res = await fetch(`${stack.url}/openapi.json`);
  assert.equal(res.status, 200);
  const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
  assert.equal(doc.openapi, "3.1.0");
  for (const path of [
    "/v1/tasks",
    "/v1/tasks/{id}",
    "/hooks/{source}",
    "/v1/callbacks/{token}",
    "/v1/events",
  ]) {
    assert.ok(doc.paths[path], path);
  }
});
