import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import type { ArtifactInfo } from "../src/core/artifact.ts";
import { runTask } from "../src/core/replay.ts";
import type { ArtifactToStore, ReplayPorts } from "../src/core/replay-contract.ts";
import type { ReportSpec } from "../src/core/report.ts";
import type { StoredStep } from "../src/core/step.ts";
import type { StepApi } from "../src/core/task-type.ts";

// step.report in the replay engine, with its ports counted: the PDF is rendered once, as the
// artifact's data is read; a replay over the stored step answers the stored artifact and
// renders nothing; a render that throws is retried as step.artifact's broken stream is.

const SPEC: ReportSpec = { title: "Harbour ledger", summary: "Fifty berths.", keyPoints: ["One"] };

function harness(render: (spec: ReportSpec) => Promise<Uint8Array>) {
  const seen = { renders: 0, writes: 0, stored: [] as ArtifactToStore[], specs: [] as ReportSpec[] };
  const ports: ReplayPorts = {
    storeRunOutcome: async () => {},
    registerWait: async () => assert.fail("no wait expected"),
    callbackUrl: () => "",
    markHandedOff: async () => {},
    writeArtifact: async (data) => {
      seen.writes++;
      const hash = createHash("sha256");
      let size = 0;
      for await (const chunk of data as AsyncIterable<Uint8Array>) {
        hash.update(chunk);
        size += chunk.length;
      }
      return { blobKey: `k${seen.writes}`, size, sha256: hash.digest("hex") };
    },
    storeArtifact: async (a) => {
      seen.stored.push(a);
      return { name: a.name, size: a.size, sha256: a.sha256, content_type: a.contentType };
    },
    renderReport: async (spec) => {
      seen.renders++;
      seen.specs.push(spec);
      return render(spec);
    },
  };
  const run = (fn: (step: StepApi) => Promise<unknown>, history: StoredStep[] = []) =>
    runTask({
      fn: async (_input, step) => fn(step),
      input: null,
      ctx: { taskId: "t_1", tenantId: "tn_1", type: "x", userId: null, traceId: null },
      history,
      ports,
      maxAttempts: 3,
      advanceAttempt: 1,
    });
  return { seen, run };
}

const PDF = new TextEncoder().encode("%PDF-1.7 stand-in bytes");

test("step.report renders once into an application/pdf artifact named <id>.pdf; a replay renders nothing", async () => {
  const h = harness(async () => PDF);
  const first = await h.run((step) => step.report("summary", SPEC));
  assert.equal(first.kind, "succeeded");
  assert.equal(h.seen.renders, 1);
  assert.deepEqual(h.seen.specs, [SPEC]);
  assert.equal(h.seen.stored.length, 1);
  const stored = h.seen.stored[0]!;
  assert.equal(stored.stepId, "artifact:summary.pdf");
  assert.equal(stored.name, "summary.pdf");
  assert.equal(stored.contentType, "application/pdf");
  assert.equal(stored.size, PDF.length);
  const info = (first as { output: ArtifactInfo }).output;
  assert.equal(info.content_type, "application/pdf");

  const replay = await h.run(
    (step) => step.report("summary", SPEC),
    [
      {
        stepId: "artifact:summary.pdf",
        position: 0,
        kind: "run",
        status: "succeeded",
        output: info,
        error: null,
        attempts: 1,
        deadlineAt: null,
        handedOff: false,
      },
    ],
  );
  assert.deepEqual(replay, first);
  assert.equal(h.seen.renders, 1, "a replay must not render again");
  assert.equal(h.seen.writes, 1, "a replay must not write again");
});

test("step.report takes the artifact's name from options.name", async () => {
  const h = harness(async () => PDF);
  await h.run((step) => step.report("summary", SPEC, { name: "quarter.pdf" }));
  assert.equal(h.seen.stored[0]?.name, "quarter.pdf");
  assert.equal(h.seen.stored[0]?.stepId, "artifact:quarter.pdf");
});

test("a render that throws is retried; a report of the wrong shape fails the task without rendering", async () => {
  const h = harness(async () => {
    throw new Error("renderer broke");
  });
  const r = await h.run((step) => step.report("summary", SPEC));
  assert.equal(r.kind, "retry");
  assert.equal(h.seen.stored.length, 0);

  for (const bad of [
    { title: "" },
    { title: "x", keyPoints: "one" },
    { title: "x", sources: [{ label: "p", page: 0 }] },
    { title: "x", sources: [{ label: "p", lines: { start: 3, end: 2 } }] },
  ]) {
    const g = harness(async () => PDF);
    const failed = await g.run((step) => step.report("summary", bad as ReportSpec));
    assert.equal(failed.kind, "failed", JSON.stringify(bad));
    assert.equal((failed as { error: { code: string } }).error.code, "VALIDATION_FAILED");
    assert.equal(g.seen.renders, 0);
  }
});
