import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

let stack: Stack;
before(async () => {
  stack = await startStack();
});
after(() => stack.close());

test("GET /metrics counts submitted tasks, received webhooks and handled work in Prometheus format", async () => {
  const r = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "m" } } });
  await waitFor(async () => (await stack.api(`/v1/tasks/${r.body.task_id}`)).body.status === "succeeded");
  const res = await fetch(`${stack.url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /text\/plain/);
  const text = await res.text();
  assert.match(text, /longhaul_tasks_submitted_total\{type="demo.echo"\} 1/);
  assert.match(text, /longhaul_webhooks_received_total\{source="sim",result="accepted"\} 2/);
  assert.match(text, /longhaul_work_items_total\{kind="advance",outcome="done"\} \d+/);
  assert.match(text, /longhaul_work_item_duration_seconds_bucket/);
  assert.match(text, /longhaul_process_cpu_seconds_total/);
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
