import assert from "node:assert/strict";
import { test } from "node:test";
import { SseParser } from "../src/client/sse-parser.ts";
import { CLAIM_LABEL, decidedBy } from "../web/src/decided-by.ts";
import { graphNodes, layoutGraph, NODE_H, NODE_W } from "../web/src/graph-layout.ts";
import { exampleFrom } from "../web/src/schema-example.ts";

test("the SSE parser joins chunks split anywhere, keeps the last id, and dispatches on a blank line", () => {
  const stream =
    'retry: 1000\n\n: ping\n\nid: 7\nevent: task.created\ndata: {"seq":7}\n\n' +
    'id: 8\r\nevent: task.running\r\ndata: {"a":\r\ndata: 1}\r\n\r\n' +
    "data: no id\r\r";
  for (const size of [1, 2, 3, 5, 7, stream.length]) {
    const p = new SseParser();
    const out = [];
    for (let i = 0; i < stream.length; i += size) out.push(...p.push(stream.slice(i, i + size)));
    assert.deepEqual(
      out.map((m) => [m.id, m.event, m.data]),
      [
        ["7", "task.created", '{"seq":7}'],
        ["8", "task.running", '{"a":\n1}'],
        ["8", "message", "no id"],
      ],
      `chunks of ${size}`,
    );
    assert.equal(p.retry, 1000);
  }
});

test("graph nodes are laid out in columns by depth, each need left of what needs it", () => {
  const nodes = graphNodes({
    nodes: [
      { id: "ocr", kind: "job" },
      { id: "summary", kind: "job", needs: ["ocr"] },
      { id: "entities", kind: "job", needs: ["ocr"] },
      { id: "review", kind: "approval", needs: ["summary", "entities"] },
      { id: "publish", kind: "job", needs: ["review", "ocr"] },
    ],
  })!;
  const g = layoutGraph(nodes);
  const at = new Map(g.nodes.map((n) => [n.id, n]));
  assert.deepEqual(
    ["ocr", "summary", "entities", "review", "publish"].map((id) => at.get(id)!.depth),
    [0, 1, 1, 2, 3],
  );
  for (const e of g.edges) assert.ok(at.get(e.from)!.x + NODE_W < at.get(e.to)!.x, `${e.from} → ${e.to}`);
  assert.equal(g.edges.length, 6);
  assert.notEqual(at.get("summary")!.y, at.get("entities")!.y);
  assert.ok(g.width >= at.get("publish")!.x + NODE_W);
});

test("an edge that spans columns runs in a lane of its own, clear of the nodes it passes", () => {
  const g = layoutGraph([
    { id: "review", kind: "approval", needs: [] },
    { id: "archive", kind: "job", needs: [] },
    { id: "cooldown", kind: "sleep", needs: ["review"] },
    { id: "publish", kind: "job", needs: ["cooldown", "archive"] },
  ]);
  const cooldown = g.nodes.find((n) => n.id === "cooldown")!;
  const long = g.edges.find((e) => e.from === "archive" && e.to === "publish")!;
  assert.equal(long.via.length, 1);
  const lane = long.via[0]!;
  assert.equal(lane.x, cooldown.x);
  assert.ok(lane.y < cooldown.y || lane.y > cooldown.y + NODE_H, "the lane misses the cooldown node");
  assert.deepEqual(g.edges.find((e) => e.from === "review")!.via, []);
});

test("a graph with unknown needs or a cycle still lays out, and a non-graph input is refused", () => {
  const g = layoutGraph([
    { id: "a", kind: "job", needs: ["b"] },
    { id: "b", kind: "job", needs: ["a"] },
    { id: "c", kind: "job", needs: ["ghost"] },
  ]);
  assert.equal(g.nodes.length, 3);
  assert.equal(graphNodes({ text: "hi" }), null);
  assert.equal(graphNodes({ nodes: [{ kind: "job" }] }), null);
});

test("a name typed on an anonymous approval link is shown as claimed, an approver's as who decided", () => {
  assert.deepEqual(decidedBy({ approver: "anonymous", claimed_by: "Head of Finance" }), {
    name: "Head of Finance",
    claimed: true,
  });
  assert.deepEqual(decidedBy({ approver: "ana@acme.test" }), { name: "ana@acme.test", claimed: false });
  assert.deepEqual(decidedBy({ approver: "anonymous" }), { name: "anonymous", claimed: false });
  assert.deepEqual(decidedBy({}), { name: "someone", claimed: false });
  assert.equal(CLAIM_LABEL, "claimed");
});

test("the new-task form starts from a schema's example, else its defaults, with blanks for required fields", () => {
  assert.deepEqual(exampleFrom({ type: "object", examples: [{ a: 1 }], properties: { a: { default: 2 } } }), {
    a: 1,
  });
  assert.deepEqual(
    exampleFrom({
      type: "object",
      required: ["text", "n", "tags"],
      properties: {
        text: { type: "string" },
        n: { type: "integer", minimum: 1 },
        tags: { type: "array" },
        mode: { enum: ["fast", "slow"] },
        nested: { type: "object", properties: { on: { type: "boolean", default: true } } },
        skipped: { type: "string" },
      },
    }),
    { text: "", n: 1, tags: [], mode: "fast", nested: { on: true } },
  );
  assert.equal(exampleFrom(undefined), undefined);
  assert.equal(exampleFrom({ type: "string" }), undefined);
});

test("artifact sizes read as people read them", async () => {
  const { bytes } = await import("../web/src/format.ts");
  assert.deepEqual([0, 512, 1024, 1536, 5 * 1024 * 1024, 3 * 1024 ** 3].map(bytes), [
    "0 B",
    "512 B",
    "1.0 KiB",
    "1.5 KiB",
    "5.0 MiB",
    "3.0 GiB",
  ]);
});
