import { LonghaulError } from "../core/errors.ts";
import { checkWith, type NodeKind, nodeKinds } from "./node-with.ts";
import {
  MAX_REFERENCES,
  parseTemplate,
  parseWhen,
  type TemplatePath,
  tooManyReferences,
} from "./template.ts";

export { type NodeKind, nodeKinds };

/**
 * One node, as validated. `with` may still hold `{{ … }}` templates; they are resolved when
 * the node starts (see template.ts), and its fields are checked for the kind again then.
 */
export interface GraphNode {
  id: string;
  kind: NodeKind;
  /** Ids of the nodes that must finish first. Empty when none. */
  needs: string[];
  /** The step's options. Empty when absent. */
  with: Record<string, unknown>;
  /** Run only when this condition holds (template.ts `evaluateWhen`). */
  when?: string;
}

/** A declarative graph: the input of the `graph` task type. */
export interface GraphSpec {
  /** Parameters the templates read as `input.…`. */
  input?: unknown;
  nodes: GraphNode[];
}

export const MAX_NODES = 200;
const ID = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const SPEC_FIELDS = ["input", "nodes"];
const NODE_FIELDS = ["id", "kind", "needs", "with", "when"];
const MAX_DEPTH = 64;

function invalid(message: string): LonghaulError {
  return new LonghaulError("VALIDATION_FAILED", message);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Checks a submitted graph and returns it normalised (`needs` and `with` always present).
 * Throws VALIDATION_FAILED with a message naming the node and field at fault.
 */
export function validateGraph(input: unknown): GraphSpec {
  if (!isObject(input)) {
    throw invalid('A graph is an object {"nodes": [...]}; the input given is not an object.');
  }
  for (const key of Object.keys(input)) {
    if (!SPEC_FIELDS.includes(key)) {
      throw invalid(`A graph has the fields "nodes" and "input"; "${key}" is not one of them.`);
    }
  }
  const raw = input.nodes;
  if (!Array.isArray(raw) || raw.length === 0) {
    throw invalid('"nodes" must be a non-empty list of nodes {"id", "kind", "needs"?, "with"?, "when"?}.');
  }
  if (raw.length > MAX_NODES) {
    throw invalid(
      `A graph holds at most ${MAX_NODES} nodes; this one has ${raw.length}. Split it into tasks.`,
    );
  }
  if (input.input !== undefined && !isJson(input.input, 0)) {
    throw invalid('"input" must be plain JSON (objects, lists, strings, finite numbers, booleans, null).');
  }

  const nodes: GraphNode[] = [];
  const indexOf = new Map<string, number>();
  raw.forEach((value: unknown, index) => {
    const node = readNode(value, index);
    const earlier = indexOf.get(node.id);
    if (earlier !== undefined) {
      throw invalid(
        `Node id "${node.id}" is used twice, by nodes[${earlier}] and nodes[${index}]; ids must be unique.`,
      );
    }
    indexOf.set(node.id, index);
    nodes.push(node);
  });

  for (const node of nodes) {
    for (const need of node.needs) {
      if (!indexOf.has(need)) {
        throw invalid(`Node "${node.id}" needs "${need}", but there is no node "${need}".`);
      }
    }
  }

  const sorted = sortNodes(nodes);
  if ("cycle" in sorted) {
    throw invalid(
      `The needs form a cycle, ${sorted.cycle.join(" → ")} (each node needs the one before it), so none of these nodes can start. Remove one of these needs.`,
    );
  }

  const upstream = ancestors(nodes, sorted.order);
  const budget = { references: MAX_REFERENCES };
  for (const node of nodes) checkReferences(node, upstream.get(node.id)!, indexOf, budget);

  return input.input === undefined ? { nodes } : { input: input.input, nodes };
}

/** Node ids in an order where every node comes after its needs; among ready nodes, declaration order wins. */
export function topologicalOrder(spec: GraphSpec): string[] {
  const sorted = sortNodes(spec.nodes);
  if ("cycle" in sorted) {
    throw invalid(`The needs form a cycle, ${sorted.cycle.join(" → ")}; a graph must have none.`);
  }
  return sorted.order;
}

function readNode(value: unknown, index: number): GraphNode {
  const at = `nodes[${index}]`;
  if (!isObject(value)) throw invalid(`${at} is not an object {"id", "kind", ...}.`);
  if (value.id === undefined) throw invalid(`${at} has no "id".`);
  if (typeof value.id !== "string" || !ID.test(value.id)) {
    throw invalid(
      `${at} has the id ${JSON.stringify(value.id)}; an id starts with a letter, then up to 63 letters, digits, "_" or "-".`,
    );
  }
  const id = value.id;
  const who = `Node "${id}"`;
  for (const key of Object.keys(value)) {
    if (!NODE_FIELDS.includes(key)) {
      throw invalid(
        `${who} has an unknown field "${key}"; the fields of a node are ${NODE_FIELDS.join(", ")}.`,
      );
    }
  }
  const kind = value.kind;
  if (kind === undefined) throw invalid(`${who} has no "kind"; the known kinds are ${nodeKinds.join(", ")}.`);
  if (typeof kind !== "string" || !(nodeKinds as readonly string[]).includes(kind)) {
    throw invalid(
      `${who} has the kind ${JSON.stringify(kind)}; the known kinds are ${nodeKinds.join(", ")}.`,
    );
  }

  const needs = value.needs === undefined ? [] : value.needs;
  if (!Array.isArray(needs) || !needs.every((n) => typeof n === "string")) {
    throw invalid(`${who}: "needs" must be a list of node ids (strings).`);
  }
  const seen = new Set<string>();
  for (const need of needs as string[]) {
    if (need === id) throw invalid(`${who} needs itself; a node can only need other nodes.`);
    if (seen.has(need)) throw invalid(`${who} lists "${need}" twice in "needs".`);
    seen.add(need);
  }

  const w = value.with === undefined ? {} : value.with;
  if (!isObject(w)) throw invalid(`${who}: "with" must be an object of options for the ${kind} step.`);
  if (!isJson(w, 0)) throw invalid(`${who}: "with" must be plain JSON (no functions, undefined or NaN).`);
  checkWith(kind as NodeKind, w, id);

  const when = value.when;
  if (when !== undefined && typeof when !== "string") {
    throw invalid(`${who}: "when" must be a string such as "{{ nodes.review.output.approved }}".`);
  }

  const node: GraphNode = { id, kind: kind as NodeKind, needs: needs as string[], with: w };
  if (when !== undefined) node.when = when;
  return node;
}

/** Every template in `with` and `when` may read only `input` and the node's (transitive) needs. */
function checkReferences(
  node: GraphNode,
  upstream: ReadonlySet<string>,
  exists: ReadonlyMap<string, number>,
  budget: { references: number },
) {
  const who = `Node "${node.id}"`;
  const refs: { path: TemplatePath; where: string }[] = [];
  const collect = (value: unknown, where: string): void => {
    if (typeof value === "string") {
      if (!value.includes("{{")) return;
      let parts: ReturnType<typeof parseTemplate>;
      try {
        // At most one more than the graph has left, so an excess is found without parsing it all.
        parts = parseTemplate(value, budget.references + 1);
      } catch (err) {
        throw invalid(`${who}, ${where}: ${(err as Error).message}`);
      }
      for (const p of parts) {
        if (typeof p === "string") continue;
        if (--budget.references < 0) throw invalid(`${who}, ${where}: ${tooManyReferences().message}`);
        refs.push({ path: p, where });
      }
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => {
        collect(v, `${where}[${i}]`);
      });
    } else if (isObject(value)) {
      for (const [k, v] of Object.entries(value)) collect(v, `${where}.${k}`);
    }
  };
  collect(node.with, "with");
  if (node.when !== undefined) {
    try {
      refs.push({ path: parseWhen(node.when).path, where: "when" });
    } catch (err) {
      throw invalid(`${who}: ${(err as Error).message}`);
    }
  }

  for (const { path, where } of refs) {
    if (path.root !== "nodes") continue;
    const target = path.node;
    const ref = `"{{ ${path.text} }}" in ${where}`;
    if (target === node.id)
      throw invalid(`${who} reads its own output (${ref}); a node can read only its needs.`);
    if (!exists.has(target)) throw invalid(`${who} reads ${ref}, but there is no node "${target}".`);
    if (!upstream.has(target)) {
      throw invalid(
        `${who} reads ${ref}, but "${target}" is not among its needs, directly or through them, so it may not have finished. Add "${target}" to the needs of "${node.id}".`,
      );
    }
  }
}

/** Kahn's algorithm, choosing the earliest-declared ready node each time; or a cycle when stuck. */
function sortNodes(nodes: readonly GraphNode[]): { order: string[] } | { cycle: string[] } {
  const remaining = [...nodes];
  const placed = new Set<string>();
  const order: string[] = [];
  while (remaining.length > 0) {
    const i = remaining.findIndex((n) => n.needs.every((d) => placed.has(d)));
    if (i < 0) return { cycle: findCycle(remaining, nodes) };
    const [next] = remaining.splice(i, 1);
    placed.add(next!.id);
    order.push(next!.id);
  }
  return { order };
}

/**
 * Every stuck node needs another stuck node, so following unplaced needs from any of them
 * must come back round. Returned in run order (each needs the one before), starting at the
 * earliest-declared node of the cycle and ending where it started.
 */
function findCycle(stuck: readonly GraphNode[], all: readonly GraphNode[]): string[] {
  const byId = new Map(stuck.map((n) => [n.id, n]));
  const path: string[] = [];
  let current = stuck[0]!;
  while (!path.includes(current.id)) {
    path.push(current.id);
    const need = current.needs.find((d) => byId.has(d));
    current = byId.get(need!)!;
  }
  const loop = path.slice(path.indexOf(current.id)).reverse();
  const declared = (id: string) => all.findIndex((n) => n.id === id);
  const first = loop.reduce((best, id, i) => (declared(id) < declared(loop[best]!) ? i : best), 0);
  const rotated = [...loop.slice(first), ...loop.slice(0, first)];
  return [...rotated, rotated[0]!];
}

/** For each node, every node it needs directly or through its needs. */
function ancestors(nodes: readonly GraphNode[], order: readonly string[]): Map<string, Set<string>> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const result = new Map<string, Set<string>>();
  for (const id of order) {
    const set = new Set<string>();
    for (const need of byId.get(id)!.needs) {
      set.add(need);
      for (const a of result.get(need)!) set.add(a);
    }
    result.set(id, set);
  }
  return result;
}

function isJson(v: unknown, depth: number): boolean {
  if (depth > MAX_DEPTH) return false;
  if (v === null || typeof v === "string" || typeof v === "boolean") return true;
  if (typeof v === "number") return Number.isFinite(v);
  if (Array.isArray(v)) return v.every((x) => isJson(x, depth + 1));
  const proto = typeof v === "object" ? Object.getPrototypeOf(v) : undefined;
  if (proto === Object.prototype || proto === null) {
    return Object.values(v as object).every((x) => isJson(x, depth + 1));
  }
  return false;
}
