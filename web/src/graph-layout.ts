/** A node of a submitted graph, as far as drawing it goes. */
export interface GraphNodeSpec {
  id: string;
  kind: string;
  needs: string[];
}

export interface PlacedNode extends GraphNodeSpec {
  depth: number;
  x: number;
  y: number;
}

export interface PlacedEdge {
  from: string;
  to: string;
  /** An SVG path from the right edge of `from` to the left edge of `to`. */
  path: string;
  /** Where it crosses the columns between the two (left edge of each column, lane centre). */
  via: { x: number; y: number }[];
}

export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

export const NODE_W = 168;
export const NODE_H = 56;
const GAP_X = 72;
const GAP_Y = 24;
const PAD = 16;

/** The nodes of a `graph` task's input, or null when the input is not a graph. */
export function graphNodes(input: unknown): GraphNodeSpec[] | null {
  const nodes = (input as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) return null;
  const out: GraphNodeSpec[] = [];
  for (const n of nodes) {
    if (typeof n !== "object" || n === null || typeof (n as { id?: unknown }).id !== "string") return null;
    const { id, kind, needs } = n as { id: string; kind?: unknown; needs?: unknown };
    out.push({
      id,
      kind: typeof kind === "string" ? kind : "?",
      needs: Array.isArray(needs) ? needs.filter((x): x is string => typeof x === "string") : [],
    });
  }
  return out;
}

/** A column entry: a node, or a waypoint of an edge that spans more than one column. */
interface Slot {
  id: string;
  node: GraphNodeSpec | null;
  /** Slots in the previous column this one is drawn from. */
  from: string[];
}

const WAYPOINT_H = 14;

/**
 * Layered layout: a node's depth is one more than its deepest need, and each depth is a
 * column. An edge that spans several columns gets a waypoint in each column it crosses, so
 * it runs in a lane of its own instead of through the nodes there. Within a column, nodes and
 * waypoints are ordered by the mean row of what they come from (one barycentre pass), which
 * keeps most edges from crossing. Needs that name no node, and cycles (which the server
 * refuses anyway), are ignored rather than looping.
 */
export function layoutGraph(spec: GraphNodeSpec[]): GraphLayout {
  const byId = new Map(spec.map((n) => [n.id, n]));
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const depthOf = (id: string): number => {
    const known = depth.get(id);
    if (known !== undefined) return known;
    if (visiting.has(id)) return 0;
    visiting.add(id);
    const needs = byId.get(id)?.needs.filter((n) => byId.has(n)) ?? [];
    const d = needs.length === 0 ? 0 : 1 + Math.max(...needs.map(depthOf));
    visiting.delete(id);
    depth.set(id, d);
    return d;
  };
  for (const n of spec) depthOf(n.id);

  const columns: Slot[][] = [];
  const put = (d: number, slot: Slot) => {
    columns[d] ??= [];
    columns[d].push(slot);
  };
  const routes = new Map<string, string[]>();
  for (const n of spec) {
    const d = depth.get(n.id)!;
    const from: string[] = [];
    for (const need of n.needs) {
      const start = depth.get(need);
      if (start === undefined || start >= d) continue;
      const via: string[] = [];
      let prev = need;
      for (let c = start + 1; c < d; c++) {
        const id = `${need}\u0000${n.id}\u0000${c}`;
        put(c, { id, node: null, from: [prev] });
        via.push(id);
        prev = id;
      }
      routes.set(`${need}\u0000${n.id}`, via);
      from.push(prev);
    }
    put(d, { id: n.id, node: n, from });
  }

  const row = new Map<string, number>();
  columns.forEach((column, d) => {
    if (d > 0) {
      const weight = (s: Slot) => {
        const rows = s.from.map((x) => row.get(x)).filter((r): r is number => r !== undefined);
        return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : 0;
      };
      column.sort((a, b) => weight(a) - weight(b));
    }
    for (const [i, s] of column.entries()) row.set(s.id, i);
  });

  const heightOf = (s: Slot) => (s.node ? NODE_H : WAYPOINT_H);
  const columnHeight = (c: Slot[]) => c.reduce((h, s) => h + heightOf(s), 0) + (c.length - 1) * GAP_Y;
  const tallest = Math.max(NODE_H, ...columns.map(columnHeight));
  const height = PAD * 2 + tallest;
  const centre = new Map<string, { x: number; y: number }>();
  const nodes: PlacedNode[] = [];
  columns.forEach((column, d) => {
    const x = PAD + d * (NODE_W + GAP_X);
    let y = PAD + (tallest - columnHeight(column)) / 2;
    for (const s of column) {
      centre.set(s.id, { x, y: y + heightOf(s) / 2 });
      if (s.node) nodes.push({ ...s.node, depth: d, x, y });
      y += heightOf(s) + GAP_Y;
    }
  });

  const curve = (x1: number, y1: number, x2: number, y2: number) => {
    const bend = Math.max(24, (x2 - x1) / 2);
    return `C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
  };
  const edges: PlacedEdge[] = [];
  for (const [key, via] of routes) {
    const [from, to] = key.split("\u0000") as [string, string];
    const a = centre.get(from)!;
    const b = centre.get(to)!;
    let x = a.x + NODE_W;
    let y = a.y;
    let path = `M${x},${y}`;
    const points: { x: number; y: number }[] = [];
    for (const w of via) {
      const p = centre.get(w)!;
      path += ` ${curve(x, y, p.x, p.y)} L${p.x + NODE_W},${p.y}`;
      points.push(p);
      x = p.x + NODE_W;
      y = p.y;
    }
    path += ` ${curve(x, y, b.x, b.y)}`;
    edges.push({ from, to, path, via: points });
  }
  const width = PAD * 2 + columns.length * NODE_W + Math.max(0, columns.length - 1) * GAP_X;
  return { nodes, edges, width, height };
}
