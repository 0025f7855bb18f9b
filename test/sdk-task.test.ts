import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { z } from "zod";
import type { FileRef, TaskFiles } from "../src/core/file-refs.ts";
import { MAX_LOG_LINE_CHARS, MAX_LOG_LINES_PER_ADVANCE } from "../src/core/task-log.ts";
import { task } from "../src/core/task-type.ts";
import { waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const summarize = task({
  id: "test.summarize",
  schema: z.object({
    document: z.string().trim(),
    // An async check: the schema's validate answers a promise.
    lang: z
      .string()
      .default("en")
      .refine(async (l) => l.length === 2, "Expected a two-letter language code"),
  }),
  retry: { maxAttempts: 2 },
  run: async (input, { step }) => {
    const words = await step.run("count", () => input.document.split(/\s+/).length);
    return { words, lang: input.lang };
  },
});

const chatty = task({
  id: "test.chatty",
  run: async (input: { tag: string }, { step, log }) => {
    log.info("before the nap", { tag: input.tag });
    await step.sleep("nap", "300ms");
    log.warn("after the nap");
    const n = await step.run("n", () => 7);
    log.debug("done", { n });
    return { n };
  },
});

const flood = task({
  id: "test.flood",
  run: async (_input, { log }) => {
    log.info("x".repeat(10_000), { big: "y".repeat(10_000) });
    for (let i = 0; i < 2 * MAX_LOG_LINES_PER_ADVANCE; i++) log.info(`line ${i}`);
    return null;
  },
});

// `files` is declared on the run args: destructuring it type-checks, typed as `ctx.files` is.
const measure = task({
  id: "test.measure",
  run: async (input: { doc: FileRef }, { step, files }) => {
    const typed: TaskFiles | undefined = files;
    return step.run("measure", async () => {
      if (!typed) throw new Error("no files");
      const opened = await typed.open(input.doc);
      let bytes = 0;
      for await (const chunk of opened.stream) bytes += chunk.length;
      return { bytes, sha256: opened.sha256 ?? null };
    });
  },
});

/** What the cancelable task's step saw, by task id. */
const sawAbort = new Map<string, boolean>();
const started = new Set<string>();
const patient = task({
  id: "test.patient",
  run: async (_input, { step, signal, taskId }) =>
    step.run("wait-for-abort", async () => {
      started.add(taskId);
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        signal.addEventListener("abort", () => resolve(), { once: true });
        setTimeout(resolve, 20_000).unref();
      });
      sawAbort.set(taskId, signal.aborted);
      return signal.aborted;
    }),
});

describe("task() over HTTP: schema at submit, replay-aware log, cancel signal", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ taskTypes: [summarize, chatty, flood, patient, measure] });
  });
  after(async () => {
    await stack.close();
  });

  const taskCount = async () => (await stack.api("/v1/tasks?limit=200")).body.data.length as number;
  const ended = (id: string) =>
    waitFor(
      async () => {
        const r = await stack.api(`/v1/tasks/${id}`);
        return ["succeeded", "failed", "canceled", "timed_out"].includes(r.body.status) ? r.body : null;
      },
      10_000,
      `task ${id} to end`,
    );
  const logLines = async (id: string) => {
    const r = await stack.api(`/v1/tasks/${id}/timeline`);
    assert.equal(r.status, 200);
    return (r.body.entries as any[]).filter((e) => e.kind === "event" && e.type === "task.log");
  };

  test("input that breaks the schema is refused with 400 naming the field, and nothing is stored", async () => {
    const before = await taskCount();
    const wrongType = await stack.api("/v1/tasks", {
      body: { type: "test.summarize", input: { document: 42 } },
    });
    assert.equal(wrongType.status, 400);
    assert.equal(wrongType.body.error.code, "VALIDATION_FAILED");
    assert.match(wrongType.body.error.message, /input\.document: .*string/i);
    assert.equal(wrongType.body.error.param, "input.document", "the field at fault, as a body path");

    const missing = await stack.api("/v1/tasks", { body: { type: "test.summarize", input: {} } });
    assert.equal(missing.status, 400);
    assert.match(missing.body.error.message, /input\.document:/);

    const badAsync = await stack.api("/v1/tasks", {
      body: { type: "test.summarize", input: { document: "a b", lang: "english" } },
    });
    assert.equal(badAsync.status, 400);
    assert.match(badAsync.body.error.message, /input\.lang: Expected a two-letter language code/);

    assert.equal(await taskCount(), before, "no task was stored");
  });

  test("valid input is stored as the schema's output and runs to succeeded", async () => {
    const r = await stack.api("/v1/tasks", {
      body: { type: "test.summarize", input: { document: "  one two three  " } },
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const t = await ended(r.body.task_id);
    assert.equal(t.status, "succeeded", JSON.stringify(t));
    assert.deepEqual(t.input, { document: "one two three", lang: "en" });
    assert.deepEqual(t.output, { words: 3, lang: "en" });
  });

  test("run args carry files: a task opens its input's {file_id} through them", async () => {
    const uploaded = await fetch(`${stack.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${stack.key}`, "content-type": "text/plain" },
      body: "twelve bytes",
    });
    const file = await uploaded.json();
    const r = await stack.api("/v1/tasks", {
      body: { type: "test.measure", input: { doc: { file_id: file.file_id } } },
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const t = await ended(r.body.task_id);
    assert.equal(t.status, "succeeded", JSON.stringify(t.error));
    assert.deepEqual(t.output, { bytes: 12, sha256: file.sha256 });
  });

  test("log lines are written once although the function ran again after the sleep", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "test.chatty", input: { tag: "a" } } });
    assert.equal(r.status, 202);
    const t = await ended(r.body.task_id);
    assert.equal(t.status, "succeeded");
    const lines = await logLines(t.task_id);
    assert.deepEqual(
      lines.map((e) => e.data),
      [
        { level: "info", message: "before the nap", fields: { tag: "a" }, step_position: 0 },
        { level: "warn", message: "after the nap", fields: null, step_position: 1 },
        { level: "debug", message: "done", fields: { n: 7 }, step_position: 2 },
      ],
    );
    // The function ran twice: the sleep suspended it and its end resumed it.
    const types = ((await stack.api(`/v1/tasks/${t.task_id}/timeline`)).body.entries as any[])
      .filter((e) => e.kind === "event")
      .map((e) => e.type);
    assert.ok(types.filter((x) => x === "task.running").length >= 2, types.join(", "));
    assert.ok(
      types.indexOf("task.log") < types.indexOf("task.waiting"),
      "the first line came with the suspension",
    );
    assert.equal(types.at(-1), "task.succeeded");
  });

  test("a line is cut to size and a run writes a bounded number of lines", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "test.flood", input: {} } });
    const t = await ended(r.body.task_id);
    assert.equal(t.status, "succeeded");
    const lines = await logLines(t.task_id);
    assert.equal(lines.length, MAX_LOG_LINES_PER_ADVANCE + 1);
    const first = lines[0].data;
    assert.ok(
      first.message.length + JSON.stringify(first.fields).length <= MAX_LOG_LINE_CHARS + 64,
      "message and fields together are cut",
    );
    assert.equal(lines.at(-1).data.level, "warn");
    assert.match(lines.at(-1).data.message, /dropped/);
  });

  test("canceling the task aborts the signal its running step.run sees", async () => {
    const r = await stack.api("/v1/tasks", { body: { type: "test.patient", input: {} } });
    const id = r.body.task_id as string;
    await waitFor(() => started.has(id), 5_000, "the step to start");
    const c = await stack.api(`/v1/tasks/${id}/cancel`, { method: "POST" });
    assert.equal(c.status, 200, JSON.stringify(c.body));
    await waitFor(() => sawAbort.has(id), 5_000, "the step to see the abort");
    assert.equal(sawAbort.get(id), true);
    assert.equal((await stack.api(`/v1/tasks/${id}`)).body.status, "canceled");
  });
});
