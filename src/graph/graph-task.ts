import type { Duration } from "../core/duration.ts";
import {
  type ApprovalRequest,
  type ApprovalResult,
  defineTask,
  type StepApi,
  type TaskType,
} from "../core/task-type.ts";
import { type GraphSpec, topologicalOrder, validateGraph } from "./graph-spec.ts";
import { type NodeCall, toNodeCall } from "./node-with.ts";
import { evaluateWhen, resolveTemplate, type TemplateScope } from "./template.ts";

/** The steps a graph calls, declared by shape so that any step API offering them will do. */
export interface GraphStepApi {
  job<T = unknown>(
    id: string,
    o: { provider: string; input: unknown; timeout?: Duration; pollAfter?: Duration },
  ): Promise<T>;
  callback<T = unknown>(
    id: string,
    o: { timeout?: Duration },
    handoff?: (url: string) => unknown,
  ): Promise<T>;
  approval(id: string, o: ApprovalRequest): Promise<ApprovalResult>;
  sleep(id: string, duration: Duration): Promise<void>;
}

/** What a graph task returns: every node's output by id (null when skipped), and the skipped ids. */
export interface GraphOutput {
  nodes: Record<string, unknown>;
  skipped: string[];
}

/**
 * Runs a validated graph on `step`. Each node is one promise that waits for its needs, so
 * independent nodes call their steps in the same turn and the engine sees all their waits at
 * once. The node id is the step id, which makes each node's outcome replay on resume.
 * A node is skipped (output null) when its `when` is false or any of its needs was skipped.
 * The first node to fail fails the graph.
 */
export async function runGraph(spec: GraphSpec, step: GraphStepApi): Promise<GraphOutput> {
  const scope: TemplateScope = { input: spec.input, nodes: {} };
  const skipped = new Set<string>();
  const finished = new Map<string, Promise<void>>();
  const byId = new Map(spec.nodes.map((n) => [n.id, n]));

  // Topological order guarantees every need's promise exists before its dependents are built.
  for (const id of topologicalOrder(spec)) {
    const node = byId.get(id)!;
    const needs = node.needs.map((n) => finished.get(n)!);
    const run = async (): Promise<void> => {
      await Promise.all(needs);
      if (
        node.needs.some((n) => skipped.has(n)) ||
        (node.when !== undefined && !evaluateWhen(node.when, scope))
      ) {
        skipped.add(id);
        scope.nodes[id] = null;
        return;
      }
      const resolved = resolveTemplate(node.with, scope) as Record<string, unknown>;
      scope.nodes[id] = (await callStep(step, id, toNodeCall(node.kind, resolved, id))) ?? null;
    };
    finished.set(id, run());
  }
  await Promise.all(finished.values());

  return {
    nodes: Object.fromEntries(spec.nodes.map((n) => [n.id, scope.nodes[n.id] ?? null])),
    skipped: spec.nodes.filter((n) => skipped.has(n.id)).map((n) => n.id),
  };
}

async function callStep(step: GraphStepApi, id: string, call: NodeCall): Promise<unknown> {
  switch (call.kind) {
    case "job": {
      const { provider, input, timeout, pollAfter } = call.with;
      return step.job(id, {
        provider: provider ?? "sim",
        input: input ?? {},
        ...(timeout === undefined ? {} : { timeout }),
        ...(pollAfter === undefined ? {} : { pollAfter }),
      });
    }
    case "callback":
      // No handoff: the tenant reads the waiting step's callback URL in the task view.
      return step.callback(id, call.with.timeout === undefined ? {} : { timeout: call.with.timeout });
    case "approval": {
      // The page reads the task input, of which the graph's parameters are `input`.
      const { show, ...rest } = call.with;
      return step.approval(id, show === undefined ? rest : { ...rest, show: show.map((f) => `input.${f}`) });
    }
    case "sleep":
      await step.sleep(id, call.with.duration);
      return null;
  }
}

/**
 * The `graph` task type: its input is a graph spec (graph-spec.ts), checked at submit time.
 * `strictOrder: false` because parallel branches reach their steps in whatever order their
 * waits end, so positions on replay differ from the first run by design.
 */
export const graphTask: TaskType<unknown, GraphOutput> & { strictOrder: false } = {
  ...defineTask<unknown, GraphOutput>(
    "graph",
    (input, step) => runGraph(validateGraph(input), step as StepApi & GraphStepApi),
    { validate: validateGraph },
  ),
  strictOrder: false,
};
