import { LonghaulError, toErrorInfo } from "../core/errors.ts";
import { type RunResult, runTask } from "../core/replay.ts";
import type { LogLine } from "../core/task-log.ts";
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
  const who = { taskId, tenantId: task.tenantId, userId: task.userId, traceId: task.traceId };
  const logs: LogLine[] = [];
  const canceled = watchForCancel(d, taskId);
  let result: RunResult;
  try {
    result = await runTask({
      fn: type.run,
      input: task.input,
      ctx: { taskId, tenantId: task.tenantId, type: task.type, userId: task.userId, traceId: task.traceId },
      signal: canceled.signal,
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
        log: (line) => {
          logs.push(line);
          d.log[line.level]({ ...who, type: task.type, fields: line.fields ?? undefined }, line.message);
        },
      },
      maxAttempts: type.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      advanceAttempt: item.attempts,
      strictOrder: type.strictOrder ?? true,
      defaultWaitMs: d.defaultWaitMs,
      defaultTimeoutMs: d.defaultTimeoutMs,
      clock: d.clock,
      ...(d.random ? { random: d.random } : {}),
    });
  } finally {
    canceled.stop();
  }
  if (result.kind === "retry") {
    d.log.warn({ ...who, error: result.error, delayMs: result.delayMs }, "task will retry");
    return d.store.finishAdvance(lease, taskId, {
      kind: "retry",
      runAt: d.clock.now() + result.delayMs,
      error: result.error,
      logs,
    });
  }
  return d.store.finishAdvance(lease, taskId, { ...result, logs });
}

/** How often a running task function checks whether its task was canceled. */
const CANCEL_CHECK_MS = 1000;

/**
 * The `signal` of a run: aborted when the task is found canceled. While the function runs,
 * the task's status alone is read from the store every second (a cancel may come through any node,
 * so a read of the store is what sees it everywhere); most runs end before the first read.
 */
function watchForCancel(d: EngineDeps, taskId: string): { signal: AbortSignal; stop: () => void } {
  const ac = new AbortController();
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    d.store
      .taskStatus(taskId)
      .then((status) => {
        if (status === "canceled") {
          clearInterval(timer);
          ac.abort(new LonghaulError("TASK_CANCELED", "The task was canceled."));
        }
      })
      .catch(() => {})
      .finally(() => {
        checking = false;
      });
  }, CANCEL_CHECK_MS);
  timer.unref();
  return { signal: ac.signal, stop: () => clearInterval(timer) };
}
