import assert from "node:assert/strict";
import { cpSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, relative } from "node:path";
import { test } from "node:test";
import { freePort, tempDir, waitFor } from "./helpers.ts";
import {
  devKeyOf,
  installOrSkip,
  jsonApi,
  node,
  npm,
  packTarball,
  ROOT,
  type Running,
  startNode,
  tarballKb,
} from "./tarball.ts";

// The examples under examples/, run as their README says, on the packed package: each is
// copied to a scratch folder, the tarball is installed in place of `longhaul` with the
// example's other dependencies, and it runs under plain node. examples/embedded compiles with
// tsc and runs dist/main.js; examples/dev-config runs `longhaul dev` on its TypeScript config
// and is driven over HTTP as its README drives it with curl.

const EXAMPLES = join(ROOT, "examples");
const notCopied = new Set(["node_modules", "dist", ".longhaul", "data"]);
const ENDED = ["succeeded", "failed", "canceled", "timed_out"];

type Manifest = Record<string, Record<string, string> | string | undefined>;
const manifestOf = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
const dependencySections = ["dependencies", "devDependencies", "optionalDependencies", "peerDependencies"];

test("only the example with a TypeScript config lists tsx, a devDependency; the two copies of the task types are the same", () => {
  const names = readdirSync(EXAMPLES, { withFileTypes: true }).filter((d) => d.isDirectory());
  assert.deepEqual(names.map((d) => d.name).sort(), ["browser-follow", "dev-config", "embedded"]);
  for (const { name } of names) {
    const manifest = manifestOf(join(EXAMPLES, name));
    assert.equal(manifest.type, "module", `${name} is an ES module package`);
    // tsx is longhaul's optional peer dependency, which reads a TypeScript config: an app
    // whose config is TypeScript lists it; one that compiles its own code does not.
    for (const section of dependencySections) {
      const deps = (manifest[section] ?? {}) as Record<string, string>;
      const wanted = name === "dev-config" && section === "devDependencies";
      assert.equal(deps.tsx !== undefined, wanted, `examples/${name} and tsx in ${section}`);
    }
    assert.ok(
      ((manifest.dependencies ?? {}) as Record<string, string>).longhaul,
      `${name} depends on longhaul`,
    );
  }
  assert.equal(
    readFileSync(join(EXAMPLES, "dev-config", "tasks.ts"), "utf8"),
    readFileSync(join(EXAMPLES, "embedded", "src", "tasks.ts"), "utf8"),
    "examples/dev-config/tasks.ts is a copy of examples/embedded/src/tasks.ts",
  );
});

test("the examples run on the packed package", { timeout: 15 * 60_000 }, async (t) => {
  const started = Date.now();
  const seconds = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
  const tmp = tempDir("longhaul-examples-");
  let dev: Running | undefined;
  try {
    const tarball = await packTarball(tmp.dir);
    t.diagnostic(`${basename(tarball)}: ${tarballKb(tarball)}, packed in ${seconds()}`);

    // Each example as a user has it, with the tarball as its `longhaul`.
    const copy = (name: string) => {
      const dir = join(tmp.dir, name);
      cpSync(join(EXAMPLES, name), dir, {
        recursive: true,
        filter: (src) =>
          !relative(EXAMPLES, src)
            .split(/[\\/]/)
            .some((part) => notCopied.has(part)),
      });
      const manifest = manifestOf(dir);
      (manifest.dependencies as Record<string, string>).longhaul = `file:${tarball}`;
      writeFileSync(join(dir, "package.json"), JSON.stringify(manifest, null, 2));
      return dir;
    };
    const embedded = copy("embedded");
    const devConfig = copy("dev-config");
    const installed = await Promise.all(
      [embedded, devConfig].map((dir) => installOrSkip(t, dir, [], "examples.test.ts")),
    );
    if (installed.includes(false)) return;
    t.diagnostic(`both installed at ${seconds()}`);

    await t.test("embedded: tsc, then node dist/main.js", async () => {
      await npm(["run", "build"], embedded);
      const { stdout } = await node(["dist/main.js"], embedded, { EXAMPLE_DATA_DIR: join(embedded, "data") });
      const lines = stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as { type: string; status: string; output: any });
      const byType = Object.fromEntries(lines.map((l) => [l.type, l]));
      assert.equal(byType["example.summarize"]?.status, "succeeded", stdout);
      assert.match(byType["example.summarize"].output.summary, /^Summary: Revenue grew/);
      assert.equal(byType["example.sign_off"]?.status, "succeeded", stdout);
      assert.deepEqual(byType["example.sign_off"].output, {
        approved: true,
        by: "ana@acme.test",
        comment: "Numbers checked.",
      });
      t.diagnostic(`embedded ran at ${seconds()}`);
    });

    await t.test("dev-config: longhaul dev on longhaul.config.ts, driven over HTTP", async () => {
      const port = await freePort();
      dev = startNode(
        [
          "node_modules/.bin/longhaul",
          "dev",
          "--config",
          "longhaul.config.ts",
          "--port",
          String(port),
          "--sim-port",
          "0",
          "--data-dir",
          join(devConfig, "data"),
        ],
        devConfig,
        { LONGHAUL_LOG_LEVEL: "warn" },
      );
      const key = await devKeyOf(dev!);
      const base = `http://127.0.0.1:${port}`;
      const api = jsonApi(base, key);
      const job = await api("/v1/tasks", {
        type: "example.summarize",
        input: { document: "Revenue grew. Costs stayed flat." },
      });
      assert.equal(job.status, 202, JSON.stringify(job.body));
      const approval = await api("/v1/tasks", {
        type: "example.sign_off",
        input: { title: "Publish the Q3 report?", amount: 1200 },
      });
      assert.equal(approval.status, 202, JSON.stringify(approval.body));

      const link: string = await waitFor(
        async () =>
          (await api(`/v1/tasks/${approval.body.task_id}`)).body.steps?.find(
            (s: any) => s.id === "sign-off" && s.status === "waiting",
          )?.approvals?.[0]?.approval_url,
        30_000,
        "the approval step's link",
      );
      assert.ok(link.startsWith(`${base}/v1/approvals/`), link);
      const decided = await fetch(link, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ decision: "approve", comment: "Numbers checked." }),
      });
      assert.equal(decided.status, 200, await decided.clone().text());

      const ended = async (id: string) =>
        waitFor(
          async () => {
            const r = await api(`/v1/tasks/${id}`);
            return ENDED.includes(r.body.status) ? r.body : null;
          },
          30_000,
          `task ${id} to end`,
        );
      const summarized = await ended(job.body.task_id);
      assert.equal(summarized.status, "succeeded", JSON.stringify(summarized));
      assert.deepEqual(summarized.output, { summary: "Summary: Revenue grew. Costs stayed flat." });
      const signed = await ended(approval.body.task_id);
      assert.equal(signed.status, "succeeded", JSON.stringify(signed));
      assert.equal(signed.output.approved, true);
      assert.equal(await dev.stop(), 0, `longhaul dev exits 0 on SIGTERM: ${dev.output()}`);
      t.diagnostic(`dev-config ran at ${seconds()}`);
    });
  } finally {
    await dev?.stop();
    tmp.cleanup();
  }
});
