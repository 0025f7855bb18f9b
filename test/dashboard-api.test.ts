import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Type } from "typebox";
import { z } from "zod";
import { ManualClock } from "../src/core/clock.ts";
import type { StandardSchemaV1 } from "../src/core/standard-schema.ts";
import { STATS_MAX_ROWS, statsRange, taskStats } from "../src/core/task-stats.ts";
import { defineTask, task } from "../src/core/task-type.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

/** A TypeBox schema made a Standard Schema by hand, as a user without an adapter would. */
const typeboxInput = Object.assign(Type.Object({ n: Type.Integer({ default: 3 }) }), {
  "~standard": {
    version: 1,
    vendor: "test",
    validate: (v: unknown) =>
      typeof (v as { n?: unknown })?.n === "number"
        ? { value: v as { n: number } }
        : { issues: [{ message: "n must be a number", path: ["n"] }] },
  },
}) as unknown as StandardSchemaV1<{ n: number }>;

const zodTask = task({
  id: "test.zod",
  schema: z.object({ text: z.string().default("hello"), times: z.number().int().min(1).optional() }),
  run: async (input) => ({ said: input.text }),
});
const typeboxTask = task({ id: "test.typebox", schema: typeboxInput, run: async (input) => input.n });
const opaqueTask = task({
  id: "test.opaque",
  schema: { "~standard": { version: 1, vendor: "x", validate: (v: unknown) => ({ value: v }) } },
  run: async () => null,
});
const plainTask = defineTask("test.plain", async () => null);

describe("the dashboard's API routes", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ taskTypes: [zodTask, typeboxTask, opaqueTask, plainTask] });
  });
  after(async () => stack?.close());

  test("GET /v1/task-types lists every type by name, with the input's JSON Schema where one can be derived", async () => {
    const r = await stack.api("/v1/task-types");
    assert.equal(r.status, 200);
    const byName = new Map(
      (r.body.data as { name: string; input_schema?: any }[]).map((t) => [t.name, t.input_schema]),
    );
    for (const n of ["demo.echo", "demo.approval", "test.zod", "test.typebox", "test.opaque", "test.plain"])
      assert.ok(byName.has(n), n);
    assert.deepEqual(byName.get("test.zod").properties.text, { type: "string", default: "hello" });
    assert.deepEqual(byName.get("test.typebox"), {
      type: "object",
      required: ["n"],
      properties: { n: { type: "integer", default: 3 } },
    });
    assert.equal(byName.get("test.opaque"), undefined);
    assert.equal(byName.get("test.plain"), undefined);
    const names = r.body.data.map((t: { name: string }) => t.name);
    assert.deepEqual(names, [...names].sort());
  });

  test("GET /v1/tasks filters by a created-at range, and refuses a malformed or reversed one with VALIDATION_FAILED", async () => {
    const a = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "range" } } });
    const created = (await stack.api(`/v1/tasks/${a.body.task_id}`)).body.created_at as string;
    const t = Date.parse(created);
    const iso = (ms: number) => new Date(ms).toISOString();
    const list = async (q: string) => (await stack.api(`/v1/tasks?${q}`)).body;
    const ids = (b: { data: { task_id: string }[] }) => b.data.map((x) => x.task_id);
    assert.ok(
      ids(await list(`created_after=${iso(t)}&created_before=${iso(t + 1)}`)).includes(a.body.task_id),
    );
    assert.ok(!ids(await list(`created_after=${iso(t + 1)}`)).includes(a.body.task_id));
    assert.ok(!ids(await list(`created_before=${iso(t)}`)).includes(a.body.task_id));
    const day = created.slice(0, 10);
    assert.ok(ids(await list(`created_after=${day}`)).includes(a.body.task_id));

    for (const [q, field] of [
      ["created_after=yesterday", "created_after"],
      ["created_before=2026-02-30", "created_before"],
      ["created_after=2026-03-01T10:00:00", "created_after"],
      ["created_after=2026-03-02&created_before=2026-03-01", "created_after"],
    ] as const) {
      const r = await stack.api(`/v1/tasks?${q}`);
      assert.equal(r.status, 400, q);
      assert.equal(r.body.error.code, "VALIDATION_FAILED", q);
      assert.match(r.body.error.message, new RegExp(field), q);
    }
  });

  test("GET /v1/stats/tasks counts submitted and ended tasks per bucket, with durations, for this tenant only", async () => {
    const r0 = await stack.api("/v1/tasks", { body: { type: "demo.echo", input: { text: "a" } } });
    await waitFor(
      async () => (await stack.api(`/v1/tasks/${r0.body.task_id}`)).body.status === "succeeded",
      10_000,
      "the task to end",
    );
    const r = await stack.api("/v1/stats/tasks?window=1h");
    assert.equal(r.status, 200);
    assert.equal(r.body.window, "1h");
    assert.equal(r.body.bucket_s, 60);
    assert.equal(r.body.buckets.length, 60);
    const sum = (k: string) => r.body.buckets.reduce((n: number, b: Record<string, number>) => n + b[k]!, 0);
    assert.ok(sum("submitted") >= 1);
    assert.ok(sum("succeeded") >= 1);
    assert.equal(typeof r.body.p50_ms, "number");
    assert.ok(r.body.p95_ms >= r.body.p50_ms);
    assert.equal(r.body.complete_from, r.body.from);

    const day = await stack.api("/v1/stats/tasks?window=24h");
    assert.equal(day.body.buckets.length, 96);
    const bad = await stack.api("/v1/stats/tasks?window=7d");
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, "VALIDATION_FAILED");
  });

  test("an approval decided with a null comment and approver is recorded as having none", async () => {
    const s = await stack.api("/v1/tasks", { body: { type: "demo.approval", input: {} } });
    const step = await waitFor(
      async () =>
        (await stack.api(`/v1/tasks/${s.body.task_id}`)).body.steps.find(
          (x: { status: string }) => x.status === "waiting",
        ),
      10_000,
      "the approval to wait",
    );
    const url = new URL(step.approvals[0].reject_url);
    const r = await fetch(stack.url + url.pathname, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ comment: null, approver: null }),
    });
    assert.equal(r.status, 200, await r.clone().text());
    const t = await waitFor(
      async () => {
        const x = (await stack.api(`/v1/tasks/${s.body.task_id}`)).body;
        return x.status === "succeeded" || x.status === "failed" ? x : null;
      },
      10_000,
      "the task to resume",
    );
    const decided = t.steps.find((x: { kind: string }) => x.kind === "approval");
    assert.equal(decided.decisions[0].decision, "reject");
    assert.equal(decided.decisions[0].comment ?? null, null);
  });
});

test("task stats: buckets align to the window's end, p50/p95 by nearest rank, canceled tasks not in durations", () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12, 30, 20));
  const range = statsRange("1h", clock.now());
  assert.equal(range.to, Date.UTC(2026, 0, 1, 12, 31));
  assert.equal(range.from, Date.UTC(2026, 0, 1, 11, 31));
  const last = range.to - 30_000;
  const ended = [100, 200, 300, 400, 10_000].map((d) => ({
    status: "succeeded" as const,
    createdAt: last - d,
    updatedAt: last,
  }));
  const s = taskStats(range, {
    submitted: [last, last - 60_000, range.from - 1],
    ended: [...ended, { status: "canceled", createdAt: 0, updatedAt: last }],
  });
  const b = s.buckets.at(-1)!;
  assert.deepEqual([b.submitted, b.succeeded, b.canceled, b.p50Ms, b.p95Ms], [1, 5, 1, 300, 10_000]);
  assert.equal(s.buckets.at(-2)!.submitted, 1);
  assert.equal(s.buckets.at(-2)!.p50Ms, null);
  assert.equal(s.completeFrom, range.from);
  const full = taskStats(range, { submitted: Array.from({ length: STATS_MAX_ROWS }, () => last), ended: [] });
  assert.equal(full.completeFrom, last);
  assert.throws(() => statsRange("7d", 0), /Unknown stats window/);
});
