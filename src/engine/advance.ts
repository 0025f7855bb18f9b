import { LonghaulError, toErrorInfo } from "../core/errors.ts";
import { runTask } from "../core/replay.ts";
import type { Lease, WorkItem } from "../store/store.ts";
import type { EngineDeps } from "./deps.ts";

const DEFAULT_MAX_ATTEMPTS = 4;

/**
 * Advances one task: re-runs its function with replay of the stored steps and records what
 * happened. The work item's concurrency key makes this the task's only advancer (ARCHITECTURE §3.4).
 */
export async function advance(d: EngineDeps, item: WorkItem, lease: Lease): Promise<void> {
  const taskId = String(item.payload.taskId);
  const loaded = await d.store.loadForAdvance(taskId);
  if (!loaded) return d.store.complete(lease);
  const { task, history } = loaded;
  const type = d.taskTypes.find(task.type);
  if (!type) {
    const error = toErrorInfo(
      new LonghaulError(
        "TASK_TYPE_UNKNOWN",
        `No task type "${task.type}" is registered on this node; register it on every worker node.`,
      ),
    );
    return d.store.finishAdvance(lease, taskId, { kind: "failed", error });
  }
  if ((await d.store.beginAdvance(lease, taskId)) !== "started") return;
  const result = await runTask({
    fn: type.run,
    input: task.input,
    ctx: { taskId, tenantId: task.tenantId, type: task.type, userId: task.userId, traceId: task.traceId },
    history,
    ports: {
      storeRunOutcome: (o) => d.store.storeRunOutcome(lease, taskId, o),
      registerWait: (w) =>
        d.store.registerWait(
          lease,
          taskId,
          w.kind === "job" ? { ...w, pollAfterMs: w.pollAfterMs ?? d.pollAfterMs } : w,
        ),
      callbackUrl: (s) => d.urls.callback(task.tenantId, taskId, s),
      markHandedOff: (stepId) => d.store.markHandedOff(lease, taskId, stepId),
    },
    maxAttempts: type.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    advanceAttempt: item.attempts,
    strictOrder: type.strictOrder ?? true,
    defaultWaitMs: d.defaultWaitMs,
    defaultTimeoutMs: d.defaultTimeoutMs,
    clock: d.clock,
    ...(d.random ? { random: d.random } : {}),
  });
  if (result.kind === "retry") {
    d.log.warn(
      {
        taskId,
        tenantId: task.tenantId,
        userId: task.userId,
        traceId: task.traceId,
        error: result.error,
        delayMs: result.delayMs,
      },
      "task will retry",
    );
    return d.store.finishAdvance(lease, taskId, {
      kind: "retry",
      runAt: d.clock.now() + result.delayMs,
      error: result.error,
    });
  }
  return d.store.finishAdvance(lease, taskId, result);
}
