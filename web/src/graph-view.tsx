import type { TaskStep as Step, TaskDetail } from "../../src/client/index.ts";
import { label } from "./format.ts";
import { type GraphNodeSpec, layoutGraph, NODE_H, NODE_W } from "./graph-layout.ts";
import { terminal } from "./task-status.ts";

/** What a node shows: its step's status, or where it stands without a step. */
export type NodeState = Step["status"] | "skipped" | "pending" | "not_run";

export function nodeState(task: TaskDetail, id: string): NodeState {
  const step = task.steps.find((s) => s.id === id);
  if (step) return step.status;
  const skipped = (task.output as { skipped?: unknown } | null)?.skipped;
  if (Array.isArray(skipped) && skipped.includes(id)) return "skipped";
  return terminal.has(task.status) ? "not_run" : "pending";
}

/** A `graph` task drawn as its graph, each node coloured by its state (graph-layout.ts). */
export function GraphView({
  task,
  nodes,
  onSelect,
}: {
  task: TaskDetail;
  nodes: GraphNodeSpec[];
  onSelect?: (id: string) => void;
}) {
  const g = layoutGraph(nodes);
  const states = new Map(nodes.map((n) => [n.id, nodeState(task, n.id)]));
  const counts = new Map<NodeState, number>();
  for (const s of states.values()) counts.set(s, (counts.get(s) ?? 0) + 1);
  return (
    <div class="graph">
      <div class="graph-legend">
        {[...counts].map(([s, n]) => (
          <span key={s} class={`legend n-${s}`}>
            <span class="swatch" /> {label(s)} {n}
          </span>
        ))}
      </div>
      <div class="graph-scroll">
        <svg
          width={g.width}
          height={g.height}
          viewBox={`0 0 ${g.width} ${g.height}`}
          role="img"
          aria-label={`Graph of ${nodes.length} nodes`}
        >
          <defs>
            <marker
              id="arrow"
              viewBox="0 0 10 10"
              refX="9"
              refY="5"
              markerWidth="7"
              markerHeight="7"
              orient="auto"
            >
              <path d="M0,0 L10,5 L0,10 z" class="arrowhead" />
            </marker>
          </defs>
          {g.edges.map((e) => (
            <path
              key={`${e.from}>${e.to}`}
              d={e.path}
              class={`edge e-${states.get(e.from)}`}
              marker-end="url(#arrow)"
            />
          ))}
          {g.nodes.map((n) => {
            const state = states.get(n.id) ?? "pending";
            return (
              // biome-ignore lint/a11y/useSemanticElements: an SVG group cannot be a <button>.
              <g
                key={n.id}
                class={`node n-${state}`}
                transform={`translate(${n.x},${n.y})`}
                data-node={n.id}
                data-state={state}
                role="button"
                tabIndex={0}
                onClick={() => onSelect?.(n.id)}
                onKeyDown={(e) => e.key === "Enter" && onSelect?.(n.id)}
              >
                <title>{`${n.id} (${n.kind}): ${label(state)}`}</title>
                <rect width={NODE_W} height={NODE_H} rx={10} />
                <text x={14} y={23} class="node-id">
                  {n.id.length > 19 ? `${n.id.slice(0, 18)}…` : n.id}
                </text>
                <text x={14} y={42} class="node-state">
                  {n.kind} · {label(state)}
                </text>
              </g>
            );
          })}
        </svg>
      </div>
    </div>
  );
}
