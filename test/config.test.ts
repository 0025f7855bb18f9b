import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { createLonghaul } from "../src/app.ts";
import { checkConfig, configPath, defineConfig, engineOptions, readConfig } from "../src/cli/config.ts";
import { withGraph } from "../src/cli/serve.ts";
import type { LonghaulError } from "../src/core/errors.ts";
import { defineTask } from "../src/core/task-type.ts";
import { parseBriefEvent } from "../src/providers/brief-event.ts";
import { providersFromConfig } from "../src/providers/from-config.ts";
import type { Provider } from "../src/providers/provider.ts";
import { quietLog, tempDir } from "./helpers.ts";

const invalid = (pattern: RegExp) => (e: LonghaulError) =>
  e.code === "CONFIG_INVALID" && pattern.test(e.message);

test("an unknown key, at the top or inside a block, is CONFIG_INVALID naming it", () => {
  assert.throws(
    () => checkConfig({ public_url: "https://x", pubic_url: "https://x" }),
    invalid(/"pubic_url"/),
  );
  assert.throws(() => checkConfig({ reconciler: { poll_after: 60 } }), invalid(/"reconciler\.poll_after"/));
  assert.throws(
    () => checkConfig({ metrics: { listen: "127.0.0.1:9464", open: true } }),
    invalid(/"metrics\.open"/),
  );
  assert.throws(
    () => checkConfig({ waits: 5 }),
    invalid(/^waits must be an object \(in the config\); got 5\.$/),
  );
  assert.throws(() => checkConfig({ tasks: {} }), invalid(/^tasks must be a list of task types/));
  const ok = { public_url: "https://x", tokens: { ttl_s: 60 }, outbound: { timeout_s: 5 }, tasks: [] };
  assert.equal(checkConfig(ok), ok);
});

test("a defineConfig .mjs file is found in the working directory and loaded; tasks join taskTypes", async () => {
  const tmp = tempDir();
  const configModule = pathToFileURL(resolve(import.meta.dirname, "../src/cli/config.ts")).href;
  writeFileSync(
    join(tmp.dir, "longhaul.config.mjs"),
    `import { defineConfig } from ${JSON.stringify(configModule)};
export default defineConfig({
  public_url: "https://file.example.com",
  reconciler: { poll_after_s: 90 },
  tasks: [{ name: "from.tasks", run: async () => 1 }],
  taskTypes: [{ name: "from.taskTypes", run: async () => 2 }],
});
`,
  );
  assert.equal(configPath(undefined, {}, tmp.dir), join(tmp.dir, "longhaul.config.mjs"));
  const config = await readConfig(undefined, {}, tmp.dir);
  assert.equal(config.public_url, "https://file.example.com");
  assert.equal(engineOptions(config).pollAfterMs, 90_000);
  assert.deepEqual(
    config.taskTypes?.map((t) => t.name),
    ["from.taskTypes", "from.tasks"],
  );
  assert.equal("tasks" in config, false);

  // The environment wins over the file; LONGHAUL_CONFIG names the file when --config does not.
  const env = { LONGHAUL_PUBLIC_URL: "https://env.example.com", LONGHAUL_METRICS_LISTEN: "127.0.0.1:9999" };
  const overridden = await readConfig(undefined, env, tmp.dir);
  assert.equal(overridden.public_url, "https://env.example.com");
  assert.equal(overridden.metrics?.listen, "127.0.0.1:9999");
  // Every key of a block has its variable, LONGHAUL_<BLOCK>_<KEY>: numbers, booleans and lists as JSON.
  const blocks = await readConfig(
    undefined,
    {
      LONGHAUL_RECONCILER_POLL_AFTER_S: "30",
      LONGHAUL_LIMITS_API_PER_MIN: "120",
      LONGHAUL_OUTBOUND_RETRY_SCHEDULE_S: "[0, 5, 60]",
      LONGHAUL_OUTBOUND_ALLOW_PRIVATE_NETWORKS: "true",
      LONGHAUL_METRICS_PUBLIC: "false",
    },
    tmp.dir,
  );
  assert.equal(engineOptions(blocks).pollAfterMs, 30_000);
  assert.deepEqual(blocks.limits, { api_per_min: 120 });
  assert.deepEqual(blocks.outbound?.retry_schedule_s, [0, 5, 60]);
  assert.equal(blocks.outbound?.allow_private_networks, true);
  assert.equal(blocks.metrics?.public, false);
  await assert.rejects(
    readConfig(undefined, { LONGHAUL_OUTBOUND_RETRY_SCHEDULE_S: "[0, 5" }, tmp.dir),
    invalid(/LONGHAUL_OUTBOUND_RETRY_SCHEDULE_S is not valid JSON/),
  );
  writeFileSync(join(tmp.dir, "other.mjs"), "export default { publik_url: 1 };\n");
  await assert.rejects(
    readConfig(undefined, { LONGHAUL_CONFIG: "other.mjs" }, tmp.dir),
    invalid(/"publik_url"/),
  );
  await assert.rejects(readConfig("missing.mjs", {}, tmp.dir), invalid(/does not exist/));
  // Nothing found: an empty config.
  const empty = tempDir();
  assert.deepEqual(await readConfig(undefined, {}, empty.dir), {});
  empty.cleanup();
  tmp.cleanup();
  assert.deepEqual(defineConfig({ waits: { default_timeout_s: 1 } }), { waits: { default_timeout_s: 1 } });
});

test("a Provider object in providers is used as it is, beside config entries", async () => {
  const created: string[] = [];
  const mine: Provider = {
    name: "mine",
    async create(req) {
      created.push(req.idempotencyKey);
      return { jobId: `job_${req.taskId}`, status: "running" };
    },
    parseEvent: (body) => parseBriefEvent(body),
  };
  const config = checkConfig({
    providers: { mine, sim: { base_url: "http://127.0.0.1:8788" } },
    sources: { mine: { provider: "mine", secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"] } },
    public_url: "https://app.example.com",
  });
  const providers = providersFromConfig(config.providers ?? {});
  assert.deepEqual(
    providers.map((p) => p.name),
    ["mine", "sim"],
  );
  assert.equal(providers[0], mine);
  assert.throws(() => providersFromConfig({ other: mine }), invalid(/Provider "other" .* named "mine"/));
  assert.throws(
    () => providersFromConfig({ half: { create: async () => ({}) } as never }),
    invalid(/no parseEvent/),
  );

  const tmp = tempDir();
  const lh = await createLonghaul({
    databaseUrl: `sqlite:${join(tmp.dir, "config.db")}`,
    providers,
    ...(config.sources ? { sources: config.sources } : {}),
    ...(config.public_url ? { publicUrl: config.public_url } : {}),
    tasks: [
      defineTask("use.mine", async (_input, step) => step.job("work", { provider: "mine", input: {} })),
    ],
    logger: quietLog(),
  });
  const { task_id } = await lh.submit({ type: "use.mine" });
  await lh.drain();
  assert.deepEqual(created, [`${task_id}:work`]);
  await lh.close();
  tmp.cleanup();
});

test("serve registers graph beside the config's task types, unless the config has its own", () => {
  assert.deepEqual(
    withGraph([]).map((t) => t.name),
    ["graph"],
  );
  const own = defineTask("graph", async () => null);
  assert.deepEqual(withGraph([own]), [own]);
});
