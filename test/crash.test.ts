import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { hashApiKey, newApiKey } from "../src/http/auth.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { freePort, sleep, tempDir, waitFor } from "./helpers.ts";
import { answering, apiOf, demoConfig, exited, startCli } from "./processes.ts";
import { SIM_SECRET } from "./stack.ts";

test("SIGKILL with 30 tasks in flight, then a restart on the same data: all 30 succeed, each with exactly one external job", async () => {
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
  let server = startCli(serveArgs, env);
  const base = `http://127.0.0.1:${port}`;
  const up = () => answering(`${base}/healthz`, "the server to answer");
  const api = apiOf(base, key);

  try {
    await up();
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${simPort}/v1/stats`).catch(() => null))?.ok,
      20_000,
      "the simulator",
    );
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await api("/v1/tasks", {
        type: "demo.echo",
        input: { text: `n${i}`, delay_ms: 100 + (i % 10) * 60 },
      });
      assert.equal(r.status, 202);
      ids.push(r.body.task_id);
    }
    await sleep(150);
    const done = await api("/v1/tasks?status=succeeded&limit=200");
    assert.ok(done.body.data.length < 30, "the kill must land while tasks are in flight");
    server.kill("SIGKILL");
    await exited(server);
    // Webhooks sent while the server is down fail; the simulator retries them.
    await sleep(300);
    server = startCli(serveArgs, env);
    await up();

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
    server.kill("SIGKILL");
    sim.kill("SIGKILL");
    await Promise.all([exited(server), exited(sim)]);
    tmp.cleanup();
  }
});
