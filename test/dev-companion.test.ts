import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { companionLine, duration, type LineStyle, wantsColor } from "../src/cli/dev-companion.ts";
import { prettyLogLine } from "../src/cli/dev-log.ts";
import type { TaskEventRow } from "../src/store/store.ts";
import { freePort, tempDir, waitFor } from "./helpers.ts";
import { apiOf, CLI_FROM_SOURCE, exited } from "./processes.ts";

// `longhaul dev` as a developer watches it: one readable line per task event that matters,
// with the task's dashboard link, and under --watch a restart on a change to a task file.

const tmp = tempDir("longhaul-dev-companion-");
const children: ChildProcess[] = [];
after(async () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) c.kill("SIGTERM");
    await exited(c);
  }
  tmp.cleanup();
});

const errorsModule = pathToFileURL(join(import.meta.dirname, "..", "src", "core", "errors.ts")).href;

/** An app folder: a config that imports its task types from tasks.mjs. */
function app(name: string, tasks: string): string {
  const dir = join(tmp.dir, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(
    join(dir, "longhaul.config.mjs"),
    `import { tasks } from "./tasks.mjs";\nexport default { tasks };\n`,
  );
  writeFileSync(join(dir, "tasks.mjs"), tasks);
  return dir;
}

/** `longhaul dev` in `dir` on a free port, its data inside `dir`; what it printed so far. */
async function startDev(dir: string, extra: string[] = []) {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      ...CLI_FROM_SOURCE,
      ...["dev", "--config", join(dir, "longhaul.config.mjs"), "--port", String(port)],
      ...["--data-dir", join(dir, "data"), ...extra],
    ],
    {
      env: { ...process.env, LONGHAUL_LOG_LEVEL: "warn", LONGHAUL_DATABASE_URL: "", LONGHAUL_API_KEY: "" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (b: Buffer) => {
    stdout += b.toString("utf8");
  });
  child.stderr!.on("data", (b: Buffer) => {
    stderr += b.toString("utf8");
  });
  const out = () => stdout;
  const key = await waitFor(
    () => {
      if (child.exitCode !== null)
        throw new Error(`longhaul dev exited ${child.exitCode}: ${stdout}${stderr}`);
      return /API key\s+(lh_\S+)/.exec(stdout)?.[1];
    },
    30_000,
    "longhaul dev to print its key",
  );
  const base = `http://127.0.0.1:${port}`;
  return { child, out, err: () => stderr, base, api: apiOf(base, key) };
}

/** The first line of `text` that matches every pattern. */
const lineWith = (text: string, ...patterns: (string | RegExp)[]) =>
  text.split("\n").find((l) => patterns.every((p) => (typeof p === "string" ? l.includes(p) : p.test(l))));

test("longhaul dev prints a readable line with the error code and the dashboard link when a task fails", async () => {
  const dir = app(
    "fails",
    `import { NonRetriableError } from ${JSON.stringify(errorsModule)};
export const tasks = [{ name: "app.charge", run: async () => { throw new NonRetriableError("card declined"); } }];
`,
  );
  const dev = await startDev(dir);
  // The banner names the registered task types, the config's among the demo's.
  assert.match(dev.out(), /task types +demo\.echo, .*app\.charge/);

  const submitted = await dev.api("/v1/tasks", { type: "app.charge", input: {} });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
  const id: string = submitted.body.task_id;
  const link = `${dev.base}/#/tasks/${id}`;
  const failed = await waitFor(
    () => lineWith(dev.out(), "failed", id, "NON_RETRIABLE: card declined", link),
    30_000,
    "the companion's line of the failure",
  );
  assert.match(
    failed,
    new RegExp(`^\\d\\d:\\d\\d:\\d\\d  failed +app\\.charge  ${id}  NON_RETRIABLE: card declined  `),
  );
  assert.ok(lineWith(dev.out(), "submitted", "app.charge", id, link), dev.out());
  // Not a TTY: no colours. No JSON log lines on stdout.
  assert.equal(dev.out().includes("\u001b["), false);
  assert.doesNotMatch(dev.out(), /^\{"level"/m);

  // A waiting task and its success, with how long it took.
  const echo = await dev.api("/v1/tasks", { type: "demo.echo", input: { text: "hi", delay_ms: 1 } });
  const echoId: string = echo.body.task_id;
  const waiting = await waitFor(() => lineWith(dev.out(), "waiting", echoId), 30_000, "the waiting line");
  assert.match(waiting, /on a job at provider sim \(step "echo"\)/);
  const done = await waitFor(() => lineWith(dev.out(), "succeeded", echoId), 30_000, "the success line");
  assert.match(
    done,
    /succeeded +demo\.echo {2}\S+ {2}in \d+(\.\d)? m?s {2}http:\/\/127\.0\.0\.1:\d+\/#\/tasks\//,
  );

  // A callback wait, and `longhaul tasks show` beside the running server: the API's JSON, links and all.
  const cb = await dev.api("/v1/tasks", { type: "demo.callback", input: {} });
  const cbId: string = cb.body.task_id;
  await waitFor(() => lineWith(dev.out(), "waiting", cbId, "on a callback"), 30_000, "the callback wait");
  // The line comes once the wait is stored; the task itself is waiting once its run has suspended.
  const fromApi = await waitFor(
    async () => {
      const t = (await dev.api(`/v1/tasks/${cbId}`)).body;
      return t.status === "waiting" ? t : null;
    },
    30_000,
    "the task to suspend",
  );
  assert.match(fromApi.steps.at(-1).callback_url, /\/v1\/callbacks\//);
  const shown = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [
        ...CLI_FROM_SOURCE,
        "tasks",
        "show",
        cbId,
        "--database-url",
        `sqlite:${join(dir, "data", "longhaul.db")}`,
      ],
      { env: { ...process.env, LONGHAUL_PUBLIC_URL: dev.base, LONGHAUL_DATABASE_URL: "" } },
      (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout)),
    ),
  );
  assert.deepEqual(JSON.parse(shown), fromApi);
});

test("longhaul dev --watch reloads on a change to a task file: new submissions run the new code; a broken file keeps the old", async () => {
  // app.steps runs a step, then waits for a signal: across a reload that renames its first
  // step, its replay meets another order.
  const version = (v: number, first = "a") => `export const tasks = [
  { name: "app.version", run: async () => ({ version: ${v} }) },
  { name: "app.steps", run: async (input, step) => {
    await step.run(${JSON.stringify(first)}, () => 1);
    await step.waitForEvent("go", { match: { event: "go" }, timeout: "1h" });
    return "done";
  } },
];
`;
  const dir = app("watched", version(1));
  const dev = await startDev(dir, ["--watch"]);
  await waitFor(() => dev.out().includes("watching"), 30_000, "the watch line");

  const runOnce = async () => {
    const r = await dev.api("/v1/tasks", { type: "app.version", input: {} });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return waitFor(
      async () => {
        const t = await dev.api(`/v1/tasks/${r.body.task_id}`);
        return t.body?.status === "succeeded" ? t.body.output : null;
      },
      30_000,
      "the task to succeed",
    );
  };
  assert.deepEqual(await runOnce(), { version: 1 });
  const steps = await dev.api("/v1/tasks", { type: "app.steps", input: {} });
  const stepsId: string = steps.body.task_id;
  await waitFor(() => lineWith(dev.out(), "waiting", stepsId, `on event "go"`), 30_000, "app.steps to wait");

  writeFileSync(join(dir, "tasks.mjs"), version(2, "renamed"));
  await waitFor(() => lineWith(dev.out(), "reloaded", "app.version"), 60_000, "the reload line");
  assert.deepEqual(await runOnce(), { version: 2 });

  // The task that was waiting resumes on the new code, whose steps come in another order.
  assert.equal((await dev.api("/v1/signals", { name: "go", data: {} })).status, 202);
  const mismatch = await waitFor(
    () => lineWith(dev.out(), "failed", stepsId, "STEP_ORDER_MISMATCH"),
    30_000,
    "the step-order failure",
  );
  assert.match(mismatch, /the reloaded code calls this task's steps in another order/);

  // A syntax error: the reload fails, says why, and the running code stays.
  const reloads = () =>
    dev
      .out()
      .split("\n")
      .filter((l) => l.includes("reloaded")).length;
  const before = reloads();
  writeFileSync(join(dir, "tasks.mjs"), "export const tasks = [{ name: ;\n");
  await waitFor(() => dev.out().includes("reload failed"), 60_000, "the failed reload line");
  assert.match(
    dev.out(),
    /reload failed; still running the code from before:\n.*SyntaxError|Unexpected token/s,
  );
  assert.equal(reloads(), before);
  assert.deepEqual(await runOnce(), { version: 2 });

  // Stopping the supervisor stops the server it runs.
  dev.child.kill("SIGTERM");
  await exited(dev.child);
  assert.equal(dev.child.exitCode, 0, dev.err());
  await waitFor(
    async () => (await fetch(`${dev.base}/healthz`).catch(() => null)) === null,
    30_000,
    "the server to stop",
  );
});

const style: LineStyle = { color: false, link: (id) => `http://127.0.0.1:8787/#/tasks/${id}` };
const event = (
  type: string,
  data: unknown,
  createdAt = Date.parse("2026-01-02T10:00:05Z"),
): TaskEventRow => ({
  seq: 1,
  tenantId: "tn_dev",
  taskId: "t_1",
  type,
  data,
  createdAt,
});
const facts = { type: "app.x", createdAt: Date.parse("2026-01-02T10:00:03Z") };

test("each kind of wait, an end and a timeout read as one line; other events have none", () => {
  const on = (data: Record<string, unknown>) =>
    /t_1 {2}(.*) {2}http/.exec(
      companionLine(event("step.waiting", { step_id: "s", ...data }), facts, style)!,
    )?.[1];
  assert.equal(
    on({ kind: "job", provider: "openai", job_id: "j" }),
    'on a job at provider openai (step "s")',
  );
  assert.equal(on({ kind: "callback" }), 'on a callback (step "s")');
  assert.match(
    on({ kind: "approval", approvers: ["ana@x.test"], deadline: "2026-01-02T11:00:00Z" })!,
    /^on an approval by ana@x\.test, until \d\d:00:00 \(step "s"\)$/,
  );
  assert.match(
    on({ kind: "sleep", deadline: "2026-01-02T10:00:09Z" })!,
    /^asleep until \d\d:00:09 \(step "s"\)$/,
  );
  assert.equal(on({ kind: "wait_event", event: "order.paid" }), 'on event "order.paid" (step "s")');
  assert.match(
    companionLine(event("task.succeeded", {}), facts, style)!,
    /succeeded {2}app\.x {2}t_1 {2}in 2\.0 s {2}http/,
  );
  assert.match(
    companionLine(
      event("task.timed_out", { error: { code: "STEP_TIMED_OUT", message: "late" } }),
      facts,
      style,
    )!,
    /timed out {2}app\.x {2}t_1 {2}STEP_TIMED_OUT: late {2}/,
  );
  assert.match(companionLine(event("task.canceled", {}), facts, style)!, /canceled +app\.x {2}t_1 {2}http/);
  const mismatch = event("task.failed", { error: { code: "STEP_ORDER_MISMATCH", message: "Step 0 is b." } });
  assert.match(
    companionLine(mismatch, facts, { ...style, watching: true })!,
    /calls this task's steps in another order/,
  );
  for (const type of ["task.running", "task.waiting", "step.succeeded", "job.created", "task.log"]) {
    assert.equal(companionLine(event(type, {}), facts, style), null, type);
  }
  assert.match(
    companionLine(event("task.created", { type: "app.x" }), null, { ...style, color: true })!,
    /\[36msubmitted/,
  );
  assert.match(
    companionLine(event("task.created", { type: "app.x", rerun_of: "t_0" }), null, style)!,
    /submitted +app\.x {2}t_1 {2}re-run of t_0 {2}http/,
  );
});

test("colours only on a TTY without NO_COLOR; durations and log lines read short", () => {
  assert.equal(wantsColor({ isTTY: true }, {}), true);
  assert.equal(wantsColor({ isTTY: true }, { NO_COLOR: "1" }), false);
  assert.equal(wantsColor({ isTTY: false }, {}), false);
  assert.equal(wantsColor({}, {}), false);
  assert.deepEqual([840, 2100, 192_000, 7_500_000].map(duration), [
    "840 ms",
    "2.1 s",
    "3 min 12 s",
    "2 h 5 min",
  ]);
  const line = prettyLogLine(
    JSON.stringify({
      level: 40,
      time: Date.now(),
      pid: 1,
      hostname: "h",
      msg: "task will retry",
      delayMs: 500,
    }),
  );
  assert.match(line, /^\d\d:\d\d:\d\d WARN {2}task will retry delayMs=500$/);
  assert.equal(prettyLogLine("not json"), "not json");
});
