import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { task } from "../src/index.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import type { Store } from "../src/store/store.ts";
import { pgAvailableOrReport, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";
import { type Stack, startStack } from "./stack.ts";
import { end, submit } from "./task-waits.ts";

// step.batch against the simulator's Batch API over real HTTP, with a SQLite file (and
// PostgreSQL) and the blob store: the sim adapter uploads the requests as JSON Lines, the simulator runs them and
// signs the end, the worker downloads the result files and merges them into items.

interface Req {
  custom_id: string;
  body: { text: string };
}

const review = task({
  id: "sim_batch",
  run: async (input: { requests: Req[]; metadata?: Record<string, string> }, { step }) =>
    step.batch("review", {
      provider: "sim",
      endpoint: "/v1/responses",
      requests: input.requests,
      resubmit: { maxRounds: 2 },
      ...(input.metadata ? { metadata: input.metadata } : {}),
    }),
});

/** The custom_ids of the input file the simulator received for a batch. */
async function receivedIds(sim: string, batchId: string): Promise<string[]> {
  const batch = await (await fetch(`${sim}/v1/batches/${batchId}`)).json();
  const text = await (await fetch(`${sim}/v1/files/${batch.input_file_id}/content`)).text();
  return text
    .trim()
    .split("\n")
    .map((l) => {
      const line = JSON.parse(l);
      assert.equal(line.method, "POST");
      assert.equal(line.url, "/v1/responses");
      return line.custom_id as string;
    });
}

function simBatchSuite(dialect: string, store?: () => Store) {
  describe(`step.batch on the simulator (${dialect})`, () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ taskTypes: [review], ...(store ? { store: store() } : {}) });
    });
    after(() => stack.close());

    test("100 requests, 10 failed and 5 expired: the simulator receives exactly those 15 in round 1; 100 items in order with usage", async () => {
      const requests: Req[] = Array.from({ length: 100 }, (_, i) => ({
        custom_id: `r-${i}`,
        body: { text: `request number ${i}` },
      }));
      const failing = requests.filter((_, i) => i % 10 === 3).map((r) => r.custom_id);
      const expiring = requests.filter((_, i) => i % 20 === 7).map((r) => r.custom_id);
      const id = await submit(stack, "sim_batch", {
        requests,
        metadata: { sim_fail: failing.join(","), sim_expire: expiring.join(",") },
      });
      const t = await end(stack, id);
      assert.equal(t.status, "succeeded", JSON.stringify(t.error));

      const batchIds = t.jobs.map((j: { job_id: string }) => j.job_id);
      assert.equal(batchIds.length, 2, JSON.stringify(t.jobs));
      assert.equal((await receivedIds(stack.sim.url, batchIds[0])).length, 100);
      const resent = requests
        .map((r) => r.custom_id)
        .filter((c) => failing.includes(c) || expiring.includes(c));
      assert.equal(resent.length, 15);
      assert.deepEqual(await receivedIds(stack.sim.url, batchIds[1]), resent, "exactly the 15, in order");

      const out = t.output;
      assert.equal(out.items.length, 100);
      assert.deepEqual(
        out.items.map((it: { custom_id: string }) => it.custom_id),
        requests.map((r) => r.custom_id),
      );
      let total = 0;
      for (const [i, it] of out.items.entries()) {
        assert.equal(it.status, "succeeded", JSON.stringify(it));
        assert.equal(it.output.output_text, `request number ${i}`);
        // The simulator counts words: 3 in, 3 out.
        assert.deepEqual(it.usage, { input_tokens: 3, output_tokens: 3, total_tokens: 6 });
        assert.equal(it.round, resent.includes(it.custom_id) ? 1 : 0);
        total += it.usage.total_tokens;
      }
      assert.deepEqual(out.counts, { succeeded: 100, failed: 0, expired: 0 });
      assert.equal(out.usage.total_tokens, total);

      // Each round's job carries its items' usage; the tenant is counted once per job.
      const used = t.jobs.map((j: { usage: { total_tokens: number } }) => j.usage.total_tokens);
      // Failed on purpose or left out, a request of round 0 reaches no model and uses no tokens.
      assert.deepEqual(used, [85 * 6, 15 * 6]);
      const usage = await stack.api("/v1/usage");
      assert.equal(usage.status, 200, JSON.stringify(usage.body));
      const tokens = usage.body.days.reduce((sum: number, d: { tokens: number }) => sum + d.tokens, 0);
      assert.equal(tokens, used[0]! + used[1]!);

      // Both rounds' files are in the blob store, under the provider and the batch.
      const keys: string[] = [];
      for await (const k of stack.app.blobs.list("providers/sim/")) keys.push(k);
      for (const b of batchIds) {
        assert.ok(keys.includes(`providers/sim/batches/${b}/input.jsonl`), keys.join(" "));
        assert.ok(keys.includes(`providers/sim/batches/${b}/output.jsonl`), keys.join(" "));
      }
      assert.ok(keys.includes(`providers/sim/batches/${batchIds[0]}/error.jsonl`));
    });
  });
}

simBatchSuite("sqlite");
if (pgAvailableOrReport(await pgUnreachable(), "PostgreSQL simulated batch tests")) {
  const { fresh } = pgTestSchemas();
  simBatchSuite("postgres", () => new PostgresStore({ url: pgUrl(fresh()) }));
}
