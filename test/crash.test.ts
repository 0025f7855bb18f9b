import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { freePort, sleep, tempDir, waitFor } from "./helpers.ts";
import { answering, apiOf, demoConfig, exited, startCli } from "./processes.ts";
import { SIM_SECRET } from "./stack.ts";

/** A `longhaul serve` process on a SQLite file, with the simulator as its own process. */
async function sqliteDeployment() {
  const tmp = tempDir();
  const simPort = await freePort();
  const port = await freePort();
  const db = join(tmp.dir, "longhaul.db");
  const key = newApiKey();
  const setup = new SqliteStore({ path: db });
  await setup.migrate();
  await setup.createTenant({ name: "crash", keyHash: hashApiKey(key) });
  await setup.close();
  const config = demoConfig(tmp.dir, "longhaul", {
    simUrl: `http://127.0.0.1:${simPort}`,
    publicUrl: `http://127.0.0.1:${port}`,
    secret: SIM_SECRET,
  });
  // The provider is another process: it outlives the server, as a real one would.
  const sim = startCli(
    ["simulate", "--port", String(simPort), "--secret", SIM_SECRET, "--state-file", join(tmp.dir, "sim.db")],
    {},
  );
  const serveArgs = ["serve", "--config", config, "--port", String(port), "--host", "127.0.0.1"];
  const env = { LONGHAUL_DATABASE_URL: `sqlite:${db}` };
  const base = `http://127.0.0.1:${port}`;
  const d = {
    base,
    simPort,
    server: startCli(serveArgs, env),
    api: apiOf(base, key),
    up: () => answering(`${base}/healthz`, "the server to answer"),
    async kill() {
      d.server.kill("SIGKILL");
      await exited(d.server);
    },
    restart() {
      d.server = startCli(serveArgs, env);
      return d.up();
    },
    async close() {
      d.server.kill("SIGKILL");
      sim.kill("SIGKILL");
      await Promise.all([exited(d.server), exited(sim)]);
      tmp.cleanup();
    },
  };
  await d.up();
  await answering(`http://127.0.0.1:${simPort}/v1/stats`, "the simulator");
  return d;
}

test("SIGKILL with 30 tasks in flight, then a restart on the same data: all 30 succeed, each with exactly one external job", async () => {
  const d = await sqliteDeployment();
  const { api, simPort } = d;
  try {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await api("/v1/tasks", {
        type: "demo.echo",
        input: { text: `n${i}`, delay_ms: 100 + (i % 10) * 60 },
      });
      assert.equal(r.status, 202);
      ids.push(r.body.task_id);
    }
    // Kill as soon as the first job is out at the provider, not after a fixed time.
    await waitFor(async () => (await api("/v1/tasks?status=waiting&limit=1")).body.data.length > 0);
    const done = await api("/v1/tasks?status=succeeded&limit=200");
    assert.ok(done.body.data.length < 30, "the kill must land while tasks are in flight");
    await d.kill();
    // Webhooks sent while the server is down fail; the simulator retries them.
    await sleep(300);
    await d.restart();

    const tasks = await waitFor(
      async () => {
        const all = await Promise.all(ids.map((id) => api(`/v1/tasks/${id}`)));
        return all.every((t) => t.body.status === "succeeded") ? all.map((t) => t.body) : null;
      },
      45_000,
      "all 30 tasks to succeed",
    );
    for (const [i, t] of tasks.entries()) {
      assert.deepEqual(t.output, { text: `n${i}` });
      assert.equal(t.jobs.length, 1, `task ${t.task_id} has one job`);
    }
    const stats = (await (await fetch(`http://127.0.0.1:${simPort}/v1/stats`)).json()) as {
      createsByKey: Record<string, number>;
    };
    for (const id of ids) assert.equal(stats.createsByKey[`${id}:echo`], 1, `one external job for ${id}`);
    assert.equal(Object.keys(stats.createsByKey).length, 30);
  } finally {
    await d.close();
  }
});

test("SIGKILL with 20 callback waits open, then a restart: all 20 resume", async () => {
  const d = await sqliteDeployment();
  try {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await d.api("/v1/tasks", { type: "demo.callback", input: {} })).body.task_id);
    const urls = await waitFor(
      async () => {
        const all = await Promise.all(ids.map((id) => d.api(`/v1/tasks/${id}`)));
        const u = all.map((t) => t.body.steps?.[0]?.callback_url as string | undefined);
        return all.every((t) => t.body.status === "waiting") && u.every(Boolean) ? (u as string[]) : null;
      },
      20_000,
      "all 20 to wait",
    );
    await d.kill();
    await d.restart();
    for (const [i, u] of urls.entries()) {
      const r = await fetch(u, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ i }),
      });
      assert.equal(r.status, 200, `callback ${i} after the restart`);
    }
    const all = await waitFor(
      async () => {
        const ts = await Promise.all(ids.map((id) => d.api(`/v1/tasks/${id}`)));
        return ts.every((t) => t.body.status === "succeeded") ? ts : null;
      },
      30_000,
      "all 20 to resume",
    );
    assert.deepEqual(
      all.map((t) => t.body.output.i),
      ids.map((_, i) => i),
    );
  } finally {
    await d.close();
  }
});
