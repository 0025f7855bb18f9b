import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { LonghaulError } from "../src/core/errors.ts";
import { toJsonText } from "../src/core/json-input.ts";
import type { StandardSchemaV1 } from "../src/core/standard-schema.ts";
import { task } from "../src/core/task-type.ts";
import { httpStatusOf } from "../src/http/error-status.ts";
import { type Stack, startStack } from "./stack.ts";

/** A Standard Schema whose validate is `validate`, for schemas that misbehave on purpose. */
const schemaOf = (validate: (value: unknown) => unknown): StandardSchemaV1 => ({
  "~standard": { version: 1, vendor: "test", validate: validate as StandardSchemaV1.Props["validate"] },
});

const cyclic = () => {
  const o: Record<string, unknown> = { a: 1 };
  o.self = o;
  return o;
};

/** Released by the test: the slow schema answers only after its request was refused. */
let releaseSlow: () => void = () => {};
const slowGate = new Promise<void>((resolve) => {
  releaseSlow = resolve;
});

const broken = {
  "test.throws": schemaOf(() => {
    throw new TypeError("Cannot read properties of undefined (reading 'x')");
  }),
  "test.rejects": schemaOf(async () => {
    throw new Error("lookup\nfailed");
  }),
  "test.throws-odd": schemaOf(() => {
    throw Object.create(null);
  }),
  "test.no-result": schemaOf(() => null),
  "test.bigint": schemaOf(() => ({ value: { amount: 10n } })),
  "test.cycle": schemaOf(() => ({ value: cyclic() })),
  "test.nan": schemaOf(() => ({ value: { ratio: Number.NaN } })),
  "test.never": schemaOf(() => new Promise(() => {})),
  "test.slow": schemaOf(async (value) => {
    await slowGate;
    return { value };
  }),
} as const;

const expected: Record<keyof typeof broken, RegExp> = {
  "test.throws": /threw TypeError: Cannot read properties of undefined \(reading 'x'\)/,
  "test.rejects": /threw Error: lookup failed/,
  "test.throws-odd": /threw a value \(object\) that cannot be shown as text/,
  "test.no-result": /not a Standard Schema result/,
  "test.bigint": /holds a BigInt at key "amount"/,
  "test.cycle": /is circular/,
  "test.nan": /holds NaN at key "ratio"/,
  "test.never": /took longer than 0\.02 s/,
  "test.slow": /took longer than 0\.02 s/,
};

const types = Object.entries(broken).map(([id, schema]) => task({ id, schema, run: async () => null }));

describe("a task type's schema that fails in itself is refused with 422 TASK_SCHEMA_FAILED", () => {
  let stack: Stack;
  before(async () => {
    // A time limit far below the default, so the timed-out schemas cost the test nothing; no
    // schema here is meant to pass, so a busy machine cannot make one fail that should not.
    stack = await startStack({ taskTypes: types, limits: { schema_timeout_s: 0.02 } });
  });
  after(async () => {
    releaseSlow();
    await stack.close();
  });

  const taskCount = async () => (await stack.api("/v1/tasks?limit=200")).body.data.length as number;

  for (const [type, message] of Object.entries(expected)) {
    test(`POST /v1/tasks and lh.submit: ${type}`, async () => {
      const before = await taskCount();
      const r = await stack.api("/v1/tasks", { body: { type, input: { n: 1 } } });
      assert.equal(r.status, 422, JSON.stringify(r.body));
      assert.equal(r.body.error.code, "TASK_SCHEMA_FAILED");
      assert.match(r.body.error.message, new RegExp(`task type ${type.replace(".", "\\.")} `));
      assert.match(r.body.error.message, message);
      assert.doesNotMatch(r.body.error.message, /\n|\bat .*\.ts:\d+/, "no stack");

      const embedded = await stack.app.submit({ type, input: { n: 1 } }).then(
        () => assert.fail("lh.submit accepted it"),
        (err: unknown) => err,
      );
      assert.ok(embedded instanceof LonghaulError);
      assert.equal(embedded.code, "TASK_SCHEMA_FAILED");
      assert.equal(httpStatusOf(embedded), 422);
      assert.match(embedded.message, message);

      if (type === "test.slow") {
        // The schema answers after its requests were refused: that answer stores nothing.
        releaseSlow();
        await slowGate;
        await new Promise((resolve) => setImmediate(resolve));
      }
      assert.equal(await taskCount(), before, "nothing was stored");
    });
  }
});

test("toJsonText refuses what JSON cannot carry or would change, and names where", () => {
  assert.deepEqual(toJsonText({ a: [1, "x", null], d: new Date(0) }), {
    ok: true,
    text: '{"a":[1,"x",null],"d":"1970-01-01T00:00:00.000Z"}',
  });
  const problem = (v: unknown) => {
    const r = toJsonText(v);
    return r.ok ? null : r.problem;
  };
  assert.match(problem({ a: { b: 1n } }) ?? "", /BigInt at key "b"/);
  assert.match(problem([1, Number.POSITIVE_INFINITY]) ?? "", /Infinity at key "1"/);
  assert.match(problem(Number.NaN) ?? "", /^holds NaN, which/);
  assert.match(problem(cyclic()) ?? "", /circular/);
  assert.match(problem(undefined) ?? "", /undefined/);
  assert.match(
    problem({
      toJSON() {
        throw new Error("nope");
      },
    }) ?? "",
    /cannot be written as JSON \(Error: nope\)/,
  );
});
