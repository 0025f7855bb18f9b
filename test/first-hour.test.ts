import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { tempDir } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const ROOT = join(import.meta.dirname, "..");

describe("what a newcomer runs into first", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack.close());

  test("a path that forgot /v1 is told where the API is; another unknown path is a plain 404", async () => {
    const r = await stack.api("/tasks", { method: "POST", body: { type: "demo.echo", input: {} } });
    assert.equal(r.status, 404);
    assert.equal(r.body.error.code, "NOT_FOUND");
    assert.equal(
      r.body.error.message,
      "No route POST /tasks. The API is under /v1: did you mean POST /v1/tasks?",
    );
    const events = await stack.api("/events?x=1");
    assert.match(events.body.error.message, /did you mean GET \/v1\/events\?$/);
    const other = await stack.api("/nope");
    assert.equal(other.body.error.message, "No route GET /nope.");
    const v1 = await stack.api("/v1/nope");
    assert.equal(v1.body.error.message, "No route GET /v1/nope.");
  });

  test("/livez answers without the store; /readyz and /healthz say whether the store answers", async () => {
    for (const [path, body] of [
      ["/livez", { status: "ok" }],
      ["/readyz", { status: "ok", store: "ok" }],
      ["/healthz", { status: "ok", store: "ok" }],
    ] as const) {
      const r = await fetch(`${stack.url}${path}`);
      assert.equal(r.status, 200, path);
      assert.deepEqual(await r.json(), body, path);
    }
  });
});

test("createLonghaul embedded in a host app writes nothing to its stdout by default", async () => {
  const tmp = tempDir("lh-quiet-");
  try {
    const script = `
      import { createLonghaul } from ${JSON.stringify(join(ROOT, "src/app.ts"))};
      import { defineTask } from ${JSON.stringify(join(ROOT, "src/core/task-type.ts"))};
      const t = defineTask("double", async (input, step) => step.run("x", () => input.n * 2));
      const lh = await createLonghaul({ databaseUrl: "sqlite:" + ${JSON.stringify(join(tmp.dir, "q.db"))}, taskTypes: [t] });
      const { task_id } = await lh.submit({ type: "double", input: { n: 2 } });
      await lh.drain();
      const url = await lh.listen({ port: 0, host: "127.0.0.1" });
      await fetch(url + "/v1/nope");
      await lh.close();
      process.stderr.write("done " + task_id);
    `;
    const env = { ...process.env };
    delete env.LONGHAUL_LOG_LEVEL;
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      { cwd: ROOT, env, timeout: 60_000 },
    );
    assert.match(stderr, /done t_/);
    assert.equal(stdout, "", "no info lines in the host app's stdout");
  } finally {
    tmp.cleanup();
  }
});
