import { type NotifyContext, notifyProblem } from "../core/notification.ts";

/**
 * What is wrong with the channels of a graph's approval nodes against the deployment's
 * notifiers (a name the config does not define, a webhook nothing can sign), or null. Checked
 * at submit, after `validateGraph` checked their shape, so a graph never fails days later on a
 * channel it named at submit.
 */
export function graphNotifyProblem(input: unknown, ctx: NotifyContext): string | null {
  const nodes = (input as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) return null;
  for (const node of nodes as { id?: unknown; kind?: unknown; with?: Record<string, unknown> }[]) {
    if (node?.kind !== "approval" || typeof node.with !== "object" || node.with === null) continue;
    const escalate = node.with.escalate as { notify?: unknown } | undefined;
    for (const [value, path] of [
      [node.with.notify, "with.notify"],
      [escalate?.notify, "with.escalate.notify"],
    ] as const) {
      // A template is resolved at run time, where the step checks it again.
      if (typeof value === "string") continue;
      const problem = notifyProblem(value, path, ctx);
      if (problem !== null) return `Node "${String(node.id)}": ${problem}`;
    }
  }
  return null;
}
