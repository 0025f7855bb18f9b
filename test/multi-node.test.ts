import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { describe, test } from "node:test";
import { EventSource } from "eventsource";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { freePort, sleep, tempDir, waitFor } from "./helpers.ts";
import {
  dropSchemas,
  freshSchemaName,
  pgAvailableOrReport,
  pgUnreachable,
  pgUrl,
  withPgServerLock,
} from "./pg-env.ts";
import { answering, apiOf, demoConfig, exited, startCli } from "./processes.ts";
import { SIM_SECRET } from "./stack.ts";

/**
 * Several `longhaul serve` processes on one PostgreSQL database, with the provider simulator
 * as its own process, as a deployment would run them.
 */
const available = pgAvailableOrReport(await pgUnreachable(), "multi-node PostgreSQL tests");

async function deployment(nodeCount: number) {
  const tmp = tempDir();
  const schema = freshSchemaName("lh_nodes");
  const url = pgUrl(schema);
  const key = newApiKey();
  const setup = new PostgresStore({ url });
  await setup.migrate();
  await setup.createTenant({ name: "nodes", keyHash: hashApiKey(key) });
  await setup.close();

  const simPort = await freePort();
  const sim = startCli(["simulate", "--port", String(simPort), "--secret", SIM_SECRET]);
  await answering(`http://127.0.0.1:${simPort}/v1/stats`, "the simulator");
  const nodes: { port: number; base: string; args: string[]; proc: ReturnType<typeof startCli> }[] = [];
  for (let i = 0; i < nodeCount; i++) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const config = demoConfig(tmp.dir, `node${i}`, {
      simUrl: `http://127.0.0.1:${simPort}`,
      publicUrl: base,
      secret: SIM_SECRET,
    });
    const args = ["serve", "--config", config, "--port", String(port), "--host", "127.0.0.1"];
    nodes.push({ port, base, args, proc: startCli(args, { LONGHAUL_DATABASE_URL: url }) });
  }
  await Promise.all(nodes.map((n) => answering(`${n.base}/healthz`, `node on ${n.port}`)));
  return {
    key,
    nodes,
    api: (i: number) => apiOf(nodes[i]!.base, key),
    async close() {
      for (const p of [sim, ...nodes.map((n) => n.proc)]) p.kill("SIGKILL");
      await Promise.all([exited(sim), ...nodes.map((n) => exited(n.proc))]);
      await dropSchemas([schema]);
      tmp.cleanup();
    },
  };
}

/** Points a capability URL minted by one node at another node. */
const onNode = (url: string, base: string) => base + new URL(url).pathname;

const waitingCallbacks = async (api: ReturnType<typeof apiOf>, ids: string[]) =>
  waitFor(
    async () => {
      const all = await Promise.all(ids.map((id) => api(`/v1/tasks/${id}`)));
      const urls = all.map((t) => t.body.steps?.[0]?.callback_url as string | undefined);
      // `waiting`: the advance that registered the wait has committed and let the task go.
      return all.every((t) => t.body.status === "waiting") && urls.every(Boolean) ? (urls as string[]) : null;
    },
    20_000,
    "every task to wait on its callback",
  );

if (available) {
  describe("many nodes on one PostgreSQL", { concurrency: 1 }, () => {
    test("a task submitted on node 1 is seen, streamed over SSE and resumed through node 2", async () => {
      await withPgServerLock(async () => {
        const d = await deployment(2);
        try {
          const submitted = await d.api(0)("/v1/tasks", { type: "demo.callback", input: {} });
          assert.equal(submitted.status, 202);
          const id = submitted.body.task_id;
          const [url] = await waitingCallbacks(d.api(1), [id]);
          const seen: string[] = [];
          const es = new EventSource(`${d.nodes[1]!.base}/v1/events?task_id=${id}`, {
            fetch: (input, init) =>
              fetch(input, {
                ...init,
                headers: { ...(init?.headers as object), authorization: `Bearer ${d.key}` },
              }),
          });
          es.onmessage = () => {};
          for (const type of ["task.created", "task.waiting", "task.succeeded"]) {
            es.addEventListener(type, () => seen.push(type));
          }
          await waitFor(
            () => seen.includes("task.waiting"),
            10_000,
            "node 2 to stream the task's past events",
          );
          const posted = await fetch(onNode(url!, d.nodes[1]!.base), {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ from: "node 2" }),
          });
          assert.equal(posted.status, 200);
          await waitFor(
            () => seen.includes("task.succeeded"),
            15_000,
            "node 2's stream to show the task succeed",
          );
          es.close();
          const t = await d.api(0)(`/v1/tasks/${id}`);
          assert.equal(t.body.status, "succeeded");
          assert.deepEqual(t.body.output, { from: "node 2" });
        } finally {
          await d.close();
        }
      });
    });

    test("node 1 is SIGKILLed with 20 waiting tasks; their callbacks, posted to node 2, resume all 20", async () => {
      await withPgServerLock(async () => {
        const d = await deployment(2);
        try {
          const ids: string[] = [];
          for (let i = 0; i < 20; i++)
            ids.push((await d.api(0)("/v1/tasks", { type: "demo.callback", input: {} })).body.task_id);
          const urls = await waitingCallbacks(d.api(0), ids);
          d.nodes[0]!.proc.kill("SIGKILL");
          await exited(d.nodes[0]!.proc);
          await Promise.all(
            urls.map(async (u, i) => {
              const r = await fetch(onNode(u, d.nodes[1]!.base), {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ n: i }),
              });
              assert.equal(r.status, 200);
            }),
          );
          const done = await waitFor(
            async () => {
              const all = await Promise.all(ids.map((id) => d.api(1)(`/v1/tasks/${id}`)));
              return all.every((t) => t.body.status === "succeeded") ? all : null;
            },
            30_000,
            "all 20 to resume on node 2",
          );
          assert.deepEqual(
            done.map((t) => t.body.output.n),
            ids.map((_, i) => i),
          );
        } finally {
          await d.close();
        }
      });
    });

    test("PostgreSQL restarts with 40 tasks in flight: /healthz turns degraded and back, and all 40 succeed", async () => {
      const cluster = readdirSync("/etc/postgresql")[0];
      if (!cluster) return assert.fail("no PostgreSQL cluster to restart");
      await withPgServerLock(async () => {
        const d = await deployment(1);
        try {
          const ids: string[] = [];
          for (let i = 0; i < 40; i++) {
            const r = await d.api(0)("/v1/tasks", {
              type: "demo.echo",
              input: { text: `r${i}`, delay_ms: 300 + (i % 8) * 100 },
            });
            ids.push(r.body.task_id);
          }
          const health = `${d.nodes[0]!.base}/healthz`;
          let degraded = false;
          const watch = (async () => {
            const until = Date.now() + 20_000;
            while (!degraded && Date.now() < until) {
              const r = await fetch(health, { signal: AbortSignal.timeout(2000) }).catch(() => null);
              if (r?.status === 503) degraded = true;
              await sleep(50);
            }
          })();
          execFileSync("pg_ctlcluster", ["--skip-systemctl-redirect", cluster, "main", "stop", "-m", "fast"]);
          // The database stays down until the node has said so (or 20 s passed), however slow
          // the machine is; then it comes back.
          try {
            await watch;
          } finally {
            execFileSync("pg_ctlcluster", ["--skip-systemctl-redirect", cluster, "main", "start"]);
          }
          assert.ok(degraded, "/healthz said degraded while the database was down");
          await answering(health, "the node to be healthy again");
          const all = await waitFor(
            async () => {
              const ts = await Promise.all(ids.map((id) => d.api(0)(`/v1/tasks/${id}`)));
              return ts.every((t) => t.body.status === "succeeded") ? ts : null;
            },
            90_000,
            "all 40 tasks to succeed after the restart",
          );
          all.forEach((t, i) => {
            assert.deepEqual(t.body.output, { text: `r${i}` });
            assert.equal(t.body.jobs.length, 1);
          });
        } finally {
          await d.close();
        }
      });
    });
  });
}
