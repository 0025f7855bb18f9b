import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LonghaulError } from "../src/core/errors.ts";
import type { StepApi, TaskContext } from "../src/core/task-type.ts";
import { MAX_NODES, topologicalOrder, validateGraph } from "../src/graph/graph-spec.ts";
import { type GraphStepApi, graphTask, runGraph } from "../src/graph/graph-task.ts";
import { evaluateWhen, resolveTemplate } from "../src/graph/template.ts";

/** Asserts that validating `input` fails with VALIDATION_FAILED and a message matching `pattern`. */
function refuses(input: unknown, pattern: RegExp) {
  assert.throws(
    () => validateGraph(input),
    (err: unknown) => {
      assert.ok(err instanceof LonghaulError);
      assert.equal(err.code, "VALIDATION_FAILED");
      assert.match(err.message, pattern);
      return true;
    },
  );
}

/** A step API whose steps stay pending until the test finishes or fails them by id. */
function fakeSteps() {
  const calls: { kind: string; id: string; options: unknown }[] = [];
  const pending = new Map<string, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  const record = <T>(kind: string, id: string, options: unknown): Promise<T> => {
    calls.push({ kind, id, options });
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
    });
  };
  const api: GraphStepApi = {
    job: (id, o) => record("job", id, o),
    callback: (id, o) => record("callback", id, o),
    approval: (id, o) => record("approval", id, o),
    sleep: (id, d) => record("sleep", id, d),
  };
  const entry = (id: string) => {
    const p = pending.get(id);
    assert.ok(p, `step "${id}" was never called`);
    return p;
  };
  return {
    api,
    calls,
    started: () => calls.map((c) => c.id),
    options: (id: string) => calls.find((c) => c.id === id)?.options,
    finish: (id: string, output?: unknown) => entry(id).resolve(output),
    fail: (id: string, err: Error) => entry(id).reject(err),
  };
}

/** Lets every continuation waiting on settled promises run. */
const settle = () => new Promise<void>((r) => setImmediate(r));

const ctx: TaskContext = { taskId: "t_1", tenantId: "tn_1", type: "graph", userId: null, traceId: null };

describe("validateGraph", () => {
  test("accepts a valid graph and fills in needs and with", () => {
    const spec = validateGraph({ nodes: [{ id: "a", kind: "callback" }] });
    assert.deepEqual(spec, { nodes: [{ id: "a", kind: "callback", needs: [], with: {} }] });
  });

  test("refuses input that is not a graph object", () => {
    refuses(null, /not an object/);
    refuses([], /not an object/);
    refuses({ nodes: [] }, /"nodes" must be a non-empty list/);
    refuses({ nodes: {} }, /"nodes" must be a non-empty list/);
    refuses({ nodes: [{ id: "a", kind: "callback" }], name: "x" }, /"name" is not one of them/);
  });

  test(`refuses more than ${MAX_NODES} nodes`, () => {
    const nodes = Array.from({ length: MAX_NODES + 1 }, (_, i) => ({ id: `n${i}`, kind: "callback" }));
    refuses({ nodes }, /at most 200 nodes; this one has 201/);
  });

  test("an unknown kind is refused with the known kinds listed", () => {
    refuses(
      { nodes: [{ id: "a", kind: "webhook" }] },
      /Node "a" has the kind "webhook"; the known kinds are job, callback, approval, sleep/,
    );
  });

  test("a missing kind, or with or needs given as null, is refused rather than defaulted", () => {
    refuses(
      { nodes: [{ id: "a" }] },
      /Node "a" has no "kind"; the known kinds are job, callback, approval, sleep/,
    );
    refuses({ nodes: [{ id: "a", kind: "job", with: null }] }, /Node "a": "with" must be an object/);
    refuses({ nodes: [{ id: "a", kind: "job", needs: null }] }, /Node "a": "needs" must be a list/);
  });

  test("a missing, malformed or duplicated id is refused", () => {
    refuses({ nodes: [{ kind: "job" }] }, /nodes\[0\] has no "id"/);
    refuses(
      { nodes: [{ id: "9lives", kind: "job" }] },
      /nodes\[0\] has the id "9lives"; an id starts with a letter/,
    );
    refuses({ nodes: [{ id: "a".repeat(65), kind: "job" }] }, /up to 63 letters/);
    refuses(
      {
        nodes: [
          { id: "a", kind: "job" },
          { id: "b", kind: "job" },
          { id: "a", kind: "sleep", with: { duration: "1s" } },
        ],
      },
      /Node id "a" is used twice, by nodes\[0\] and nodes\[2\]/,
    );
  });

  test("an unknown node field is refused, so a typo in needs cannot pass", () => {
    refuses({ nodes: [{ id: "a", kind: "job", need: ["b"] }] }, /Node "a" has an unknown field "need"/);
  });

  test("needs must be a list of strings naming other, existing nodes, once each", () => {
    refuses({ nodes: [{ id: "a", kind: "job", needs: "b" }] }, /Node "a": "needs" must be a list/);
    refuses({ nodes: [{ id: "a", kind: "job", needs: [1] }] }, /Node "a": "needs" must be a list/);
    refuses({ nodes: [{ id: "a", kind: "job", needs: ["a"] }] }, /Node "a" needs itself/);
    refuses(
      {
        nodes: [
          { id: "a", kind: "job" },
          { id: "b", kind: "job", needs: ["a", "a"] },
        ],
      },
      /Node "b" lists "a" twice/,
    );
    refuses(
      {
        nodes: [
          { id: "a", kind: "job" },
          { id: "b", kind: "job", needs: ["ocr"] },
        ],
      },
      /Node "b" needs "ocr", but there is no node "ocr"/,
    );
  });

  test("a cycle is refused with its nodes named in run order", () => {
    refuses(
      {
        nodes: [
          { id: "start", kind: "job" },
          { id: "a", kind: "job", needs: ["start", "c"] },
          { id: "b", kind: "job", needs: ["a"] },
          { id: "c", kind: "job", needs: ["b"] },
        ],
      },
      /cycle, a → b → c → a \(each node needs the one before it\)/,
    );
  });

  test("with must be an object and when a string", () => {
    refuses({ nodes: [{ id: "a", kind: "job", with: [] }] }, /Node "a": "with" must be an object/);
    refuses({ nodes: [{ id: "a", kind: "job", when: true }] }, /Node "a": "when" must be a string/);
  });

  test("a bad or missing duration is refused naming the field", () => {
    refuses({ nodes: [{ id: "pause", kind: "sleep" }] }, /Node "pause": with.duration is missing/);
    refuses(
      { nodes: [{ id: "pause", kind: "sleep", with: { duration: "soon" } }] },
      /Node "pause": with.duration is "soon", which is not a duration/,
    );
    refuses({ nodes: [{ id: "a", kind: "job", with: { timeout: -5 } }] }, /Node "a": with.timeout is -5/);
    refuses(
      { nodes: [{ id: "a", kind: "callback", with: { timeout: "2 days" } }] },
      /with.timeout is "2 days"/,
    );
  });

  test("kind-specific fields of with are checked", () => {
    refuses({ nodes: [{ id: "a", kind: "job", with: { provider: "" } }] }, /with.provider is ""/);
    refuses(
      { nodes: [{ id: "a", kind: "job", with: { timout: "5m" } }] },
      /with.timout is not a field of a job node/,
    );
    refuses(
      { nodes: [{ id: "ok", kind: "approval", with: { approvers: ["ann", "bob"], quorum: 3 } }] },
      /with.quorum is 3 but only 2 approvers are listed/,
    );
    refuses(
      { nodes: [{ id: "ok", kind: "approval", with: { quorum: 0 } }] },
      /with.quorum is 0; it must be a whole number/,
    );
    refuses(
      { nodes: [{ id: "ok", kind: "approval", with: { approvers: "ann" } }] },
      /with.approvers is "ann"/,
    );
    refuses(
      { nodes: [{ id: "ok", kind: "approval", with: { onTimeout: "ignore" } }] },
      /with.onTimeout is "ignore"/,
    );
    assert.doesNotThrow(() =>
      validateGraph({
        nodes: [
          {
            id: "ok",
            kind: "approval",
            with: {
              approvers: ["ann", "bob"],
              quorum: 2,
              timeout: "3d",
              onTimeout: { default: { approved: false } },
            },
          },
        ],
      }),
    );
  });

  test("a templated duration passes at submit time and is checked when resolved", async () => {
    const spec = validateGraph({
      input: { wait: "soon" },
      nodes: [{ id: "pause", kind: "sleep", with: { duration: "{{ input.wait }}" } }],
    });
    const steps = fakeSteps();
    await assert.rejects(
      runGraph(spec, steps.api),
      /Node "pause" \(after resolving its templates\): with.duration is "soon"/,
    );
    assert.deepEqual(steps.started(), []);
  });

  test("a template may read only input and the node's transitive needs", () => {
    const base = [
      { id: "ocr", kind: "job" },
      { id: "llm", kind: "job", needs: ["ocr"] },
      { id: "other", kind: "job" },
    ];
    refuses(
      {
        nodes: [
          ...base,
          { id: "pub", kind: "job", needs: ["llm"], with: { input: { t: "{{ nodes.other.output.text }}" } } },
        ],
      },
      /Node "pub" reads "\{\{ nodes.other.output.text \}\}" in with.input.t, but "other" is not among its needs.*Add "other" to the needs of "pub"/,
    );
    refuses(
      {
        nodes: [
          ...base,
          { id: "pub", kind: "job", needs: ["llm"], when: "{{ nodes.other.output.ok }} == true" },
        ],
      },
      /Node "pub" reads "\{\{ nodes.other.output.ok \}\}" in when, but "other" is not among its needs/,
    );
    refuses(
      { nodes: [...base, { id: "pub", kind: "job", with: { input: "{{ nodes.ghost.output }}" } }] },
      /there is no node "ghost"/,
    );
    refuses(
      { nodes: [{ id: "a", kind: "job", with: { input: "{{ nodes.a.output }}" } }] },
      /Node "a" reads its own output/,
    );
    // Through a need is enough: pub needs llm, which needs ocr.
    assert.doesNotThrow(() =>
      validateGraph({
        nodes: [
          ...base,
          { id: "pub", kind: "job", needs: ["llm"], with: { input: ["{{ nodes.ocr.output.text }}"] } },
        ],
      }),
    );
  });

  test("malformed templates and conditions are refused with the place named", () => {
    refuses(
      { nodes: [{ id: "a", kind: "job", with: { input: { p: "Hi {{ input.name" } } }] },
      /Node "a", with.input.p: .*without a closing "}}"/,
    );
    refuses(
      { nodes: [{ id: "a", kind: "job", with: { input: "{{ name }}" } }] },
      /starts with "name"; a path starts with "input" or "nodes"/,
    );
    refuses(
      {
        nodes: [
          { id: "a", kind: "job" },
          { id: "b", kind: "job", needs: ["a"], with: { input: "{{ nodes.a.text }}" } },
        ],
      },
      /write "\{\{ nodes.a.output \}\}"/,
    );
    refuses(
      { nodes: [{ id: "a", kind: "job", when: "input.go" }] },
      /Node "a": "when": "input.go" is not a condition/,
    );
    refuses({ nodes: [{ id: "a", kind: "job", when: "{{ input.n }} > 3" }] }, /is not a condition/);
    refuses(
      { nodes: [{ id: "a", kind: "job", when: "{{ input.n }} == [1]" }] },
      /"\[1\]" .* is not a literal/,
    );
  });
});

describe("topologicalOrder", () => {
  test("puts needs first and otherwise keeps declaration order", () => {
    const spec = validateGraph({
      nodes: [
        { id: "publish", kind: "job", needs: ["review"] },
        { id: "ocr", kind: "job" },
        { id: "review", kind: "approval", needs: ["summary", "tags"] },
        { id: "summary", kind: "job", needs: ["ocr"] },
        { id: "tags", kind: "job", needs: ["ocr"] },
        { id: "audit", kind: "callback" },
      ],
    });
    assert.deepEqual(topologicalOrder(spec), ["ocr", "summary", "tags", "review", "publish", "audit"]);
  });
});

describe("resolveTemplate", () => {
  const scope = {
    input: { doc: { url: "https://x.test/a.pdf", pages: 3 }, tags: ["a", "b"], name: "{{ input.doc }}" },
    nodes: { ocr: { text: "hello", lines: [{ n: 1 }] }, skipped: null },
  };

  test("a string that is exactly one reference keeps the value's type", () => {
    assert.deepEqual(
      resolveTemplate(
        {
          doc: "{{ input.doc }}",
          pages: "{{input.doc.pages}}",
          text: "{{ nodes.ocr.output.text }}",
          out: "{{ nodes.ocr.output }}",
        },
        scope,
      ),
      { doc: scope.input.doc, pages: 3, text: "hello", out: scope.nodes.ocr },
    );
    assert.deepEqual(
      resolveTemplate(["{{ input.tags.1 }}", "{{ nodes.ocr.output.lines.0.n }}", 7, true, null], scope),
      ["b", 1, 7, true, null],
    );
  });

  test("references inside text are interpolated, non-strings as JSON", () => {
    assert.equal(
      resolveTemplate(
        "Summarise {{ input.doc.url }} ({{ input.doc.pages }} pages, tags {{ input.tags }})",
        scope,
      ),
      'Summarise https://x.test/a.pdf (3 pages, tags ["a","b"])',
    );
  });

  test("a missing path is undefined as a whole value and empty in text", () => {
    assert.equal(resolveTemplate("{{ input.doc.author }}", scope), undefined);
    assert.equal(resolveTemplate("{{ nodes.nothere.output }}", scope), undefined);
    assert.equal(resolveTemplate("{{ nodes.skipped.output.text }}", scope), undefined);
    assert.equal(resolveTemplate("by {{ input.doc.author }}.", scope), "by .");
  });

  test("paths reach own data only, and substituted text is not read again as a template", () => {
    assert.equal(resolveTemplate("{{ input.constructor }}", scope), undefined);
    assert.equal(resolveTemplate("{{ input.tags.length }}", scope), undefined);
    assert.equal(resolveTemplate("{{ input.name }}", scope), "{{ input.doc }}");
  });

  test("strings without references and non-string values pass through", () => {
    assert.deepEqual(resolveTemplate({ a: "plain } text {", b: 1.5, c: false }, scope), {
      a: "plain } text {",
      b: 1.5,
      c: false,
    });
  });
});

describe("evaluateWhen", () => {
  const scope = {
    input: { flag: true, zero: 0, empty: "", name: "ann", n: 2 },
    nodes: { review: { approved: false, by: "ann" } },
  };

  test("a lone reference runs the node when its value is truthy", () => {
    assert.equal(evaluateWhen("{{ input.flag }}", scope), true);
    assert.equal(evaluateWhen("{{ input.name }}", scope), true);
    assert.equal(evaluateWhen("{{ input.zero }}", scope), false);
    assert.equal(evaluateWhen("{{ input.empty }}", scope), false);
    assert.equal(evaluateWhen("{{ input.missing }}", scope), false);
    assert.equal(evaluateWhen("{{ nodes.review.output.approved }}", scope), false);
  });

  test("== and != compare with true, false, null, numbers and strings", () => {
    assert.equal(evaluateWhen("{{ nodes.review.output.approved }} == false", scope), true);
    assert.equal(evaluateWhen("{{ nodes.review.output.approved }} != false", scope), false);
    assert.equal(evaluateWhen('{{ nodes.review.output.by }} == "ann"', scope), true);
    assert.equal(evaluateWhen('{{ nodes.review.output.by }}=="bob"', scope), false);
    assert.equal(evaluateWhen("{{ input.n }} == 2", scope), true);
    assert.equal(evaluateWhen('{{ input.n }} == "2"', scope), false);
    assert.equal(evaluateWhen("{{ input.missing }} == null", scope), true);
    assert.equal(evaluateWhen("{{ input.flag }} != null", scope), true);
  });

  test("anything beyond those forms is refused, never evaluated", () => {
    for (const expr of [
      "{{ input.n }} > 1",
      "{{ input.n }} == input.n",
      "process.exit()",
      "{{ input.n }} == {{ input.n }}",
    ]) {
      assert.throws(() => evaluateWhen(expr, scope), /VALIDATION_FAILED|not a condition|not a literal/);
    }
  });
});

describe("runGraph", () => {
  test("independent nodes call their steps before either finishes", async () => {
    const spec = validateGraph({
      nodes: [
        { id: "left", kind: "job" },
        { id: "right", kind: "job" },
      ],
    });
    const steps = fakeSteps();
    const done = runGraph(spec, steps.api);
    await settle();
    assert.deepEqual(steps.started(), ["left", "right"]);
    steps.finish("right", { r: 1 });
    steps.finish("left", { l: 1 });
    assert.deepEqual(await done, { nodes: { left: { l: 1 }, right: { r: 1 } }, skipped: [] });
  });

  test("a node starts only after all its needs finish, and reads their outputs through with", async () => {
    const spec = validateGraph({
      input: { url: "https://x.test/a.pdf" },
      nodes: [
        {
          id: "ocr",
          kind: "job",
          with: { provider: "http", input: { url: "{{ input.url }}" }, timeout: "10m" },
        },
        {
          id: "summary",
          kind: "job",
          needs: ["ocr"],
          with: { input: { text: "{{ nodes.ocr.output.text }}" } },
        },
        {
          id: "tags",
          kind: "job",
          needs: ["ocr"],
          with: { input: { pages: "{{ nodes.ocr.output.pages }}" } },
        },
        {
          id: "review",
          kind: "approval",
          needs: ["summary", "tags"],
          with: {
            approvers: ["manager@x.test"],
            title: "Publish {{ input.url }}?",
            description: "{{ nodes.summary.output.text }}",
          },
        },
      ],
    });
    const steps = fakeSteps();
    const done = runGraph(spec, steps.api);
    await settle();
    assert.deepEqual(steps.started(), ["ocr"]);
    assert.deepEqual(steps.options("ocr"), {
      provider: "http",
      input: { url: "https://x.test/a.pdf" },
      timeout: "10m",
    });

    steps.finish("ocr", { text: "contract", pages: 12 });
    await settle();
    assert.deepEqual(steps.started(), ["ocr", "summary", "tags"]);
    assert.deepEqual(steps.options("summary"), { provider: "sim", input: { text: "contract" } });
    assert.deepEqual(steps.options("tags"), { provider: "sim", input: { pages: 12 } });

    steps.finish("summary", { text: "A short contract." });
    await settle();
    assert.deepEqual(steps.started(), ["ocr", "summary", "tags"], "review waits for tags too");

    steps.finish("tags", { tags: ["legal"] });
    await settle();
    assert.deepEqual(steps.options("review"), {
      approvers: ["manager@x.test"],
      title: "Publish https://x.test/a.pdf?",
      description: "A short contract.",
    });
    steps.finish("review", { approved: true, by: "manager@x.test", comment: null });
    const output = await done;
    assert.deepEqual(output.nodes.review, { approved: true, by: "manager@x.test", comment: null });
    assert.deepEqual(Object.keys(output.nodes), ["ocr", "summary", "tags", "review"]);
  });

  test("a false when skips the node and its dependents; the output lists them", async () => {
    const spec = validateGraph({
      nodes: [
        { id: "review", kind: "approval" },
        { id: "pause", kind: "sleep", needs: ["review"], with: { duration: "1h" } },
        {
          id: "publish",
          kind: "job",
          needs: ["pause", "review"],
          when: "{{ nodes.review.output.approved }} == true",
        },
        { id: "announce", kind: "callback", needs: ["publish"] },
        { id: "archive", kind: "job", needs: ["review"], when: "{{ nodes.review.output.approved }} != true" },
      ],
    });
    const steps = fakeSteps();
    const done = runGraph(spec, steps.api);
    await settle();
    steps.finish("review", { approved: false, by: "ann", comment: "not yet" });
    await settle();
    assert.deepEqual(steps.started(), ["review", "pause", "archive"]);
    assert.equal(steps.options("pause"), "1h");
    steps.finish("pause");
    steps.finish("archive", { archived: true });
    const output = await done;
    assert.deepEqual(output, {
      nodes: {
        review: { approved: false, by: "ann", comment: "not yet" },
        pause: null,
        publish: null,
        announce: null,
        archive: { archived: true },
      },
      skipped: ["publish", "announce"],
    });
    assert.deepEqual(steps.started(), ["review", "pause", "archive"], "skipped nodes call no step");
  });

  test("a failing node fails the graph with its error", async () => {
    const spec = validateGraph({
      nodes: [
        { id: "a", kind: "job" },
        { id: "b", kind: "callback", with: { timeout: "1d" } },
        { id: "c", kind: "job", needs: ["a"] },
      ],
    });
    const steps = fakeSteps();
    const done = runGraph(spec, steps.api);
    await settle();
    assert.deepEqual(steps.options("b"), { timeout: "1d" });
    steps.fail("a", new Error("provider refused the job"));
    await assert.rejects(done, /provider refused the job/);
    assert.deepEqual(steps.started(), ["a", "b"]);
  });
});

describe("graphTask", () => {
  test("is the graph task type: validates at submit, runs without the strict step order", async () => {
    assert.equal(graphTask.name, "graph");
    assert.equal(graphTask.strictOrder, false);
    assert.throws(() => graphTask.validate?.({ nodes: [{ id: "a", kind: "nope" }] }), /known kinds/);

    const steps = fakeSteps();
    const done = graphTask.run(
      { nodes: [{ id: "wait", kind: "callback" }] },
      steps.api as unknown as StepApi,
      ctx,
    );
    await settle();
    assert.deepEqual(steps.calls, [{ kind: "callback", id: "wait", options: {} }]);
    steps.finish("wait", { ok: true });
    assert.deepEqual(await done, { nodes: { wait: { ok: true } }, skipped: [] });
  });
});
