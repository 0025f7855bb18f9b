import type { BlobStore } from "../blobs/blob-store.ts";
import type { TaskIndex } from "../core/chunk.ts";
import type { Clock } from "../core/clock.ts";
import { LonghaulError, toErrorInfo } from "../core/errors.ts";
import type { TaskFiles } from "../core/file-refs.ts";
import { type RunResult, runTask } from "../core/replay.ts";
import type { StoredStep } from "../core/step.ts";
import type { LogLine } from "../core/task-log.ts";
import type { TaskInfo, TaskType } from "../core/task-type.ts";
import type { WaitRequest } from "../core/wait.ts";
import { type NotifySettings, notifyContext } from "../notify/settings.ts";
import { renderReportPdf } from "../reports/render-report.ts";
import type { AdvanceStore, ArtifactStore, Lease, QueueStore, WaitStore } from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";
import { loadPayload, type PayloadBlobs, storePayload } from "./payloads.ts";
import { recordArtifact, writeArtifact } from "./store-artifact.ts";

const DEFAULT_MAX_ATTEMPTS = 4;

/** Who a task's log line is about, for the caller that writes it out. */
export interface TaskLogSubject {
  taskId: string;
  tenantId: string;
  type: string;
  userId: string | null;
  traceId: string | null;
}

/**
 * What one advance came to. A run that got as far as running (or failing) the task says whose
 * task it was (`who`), when the task was created, and the kinds of the waits it started
 * (`waits`), for the caller's log lines and metrics.
 */
export type AdvanceTaskResult =
  /** The task is gone, or another advance ended or parked it first. */
  | { kind: "skipped" | "parked" }
  | ({ who: TaskLogSubject; createdAt: number; waits: WaitRequest["kind"][] } & RunResult);

/**
 * Advances one task: re-runs its function with replay of the stored steps and records what
 * happened. The work item's concurrency key makes this the task's only advancer (ARCHITECTURE
 * §3.4). A task whose type this node does not know fails with TASK_TYPE_UNKNOWN; one at its
 * tenant's concurrency cap parks; a retry is put at its delay on the clock. Each new line of
 * the task's `log` goes to `onLog` as it is written, and is stored with the outcome.
 */
export async function advanceTask(
  d: {
    store: AdvanceStore & WaitStore & QueueStore & ArtifactStore;
    clock: Clock;
    /** Where `step.artifact` writes; without it that step fails the task. */
    blobs?: BlobStore | undefined;
    /** `limits.file_max_bytes` (absent: no cap) and `limits.storage_quota_bytes` for artifacts. */
    artifactLimits?: { maxBytes?: number | undefined; storageQuotaBytes?: number | undefined } | undefined;
    /** `limits.inline_max_bytes`: longer results and outputs are kept in `blobs` (§4.10). */
    inlineMaxBytes?: number | undefined;
    taskTypes: { find(name: string): TaskType | undefined };
    urls: Pick<CapabilityUrls, "callback">;
    /** The poll-after of a job whose step sets none. */
    pollAfterMs: number;
    defaultWaitMs: number;
    defaultTimeoutMs: number;
    /** The deployment's notifiers, for `step.approval`'s `notify`; absent: none. */
    notify?: NotifySettings;
    random?: (() => number) | undefined;
    onLog?: (line: LogLine, who: TaskLogSubject) => void;
    /** The `ctx.files` of a tenant's tasks; absent: tasks have none. */
    taskFiles?: ((tenantId: string) => TaskFiles) | undefined;
    /** The `ctx.index` of a task; absent: tasks have none. */
    taskIndex?: ((task: TaskInfo) => TaskIndex) | undefined;
  },
  a: { taskId: string; lease: Lease; attempts: number },
): Promise<AdvanceTaskResult> {
  const { taskId, lease } = a;
  const loaded = await d.store.loadForAdvance(taskId);
  if (!loaded) {
    await d.store.complete(lease);
    return { kind: "skipped" };
  }
  const { task } = loaded;
  const who: TaskLogSubject = {
    taskId,
    tenantId: task.tenantId,
    type: task.type,
    userId: task.userId,
    traceId: task.traceId,
  };
  const waits: WaitRequest["kind"][] = [];
  const about = { who, createdAt: task.createdAt, waits };
  const type = d.taskTypes.find(task.type);
  if (!type) {
    const error = toErrorInfo(
      new LonghaulError(
        "TASK_TYPE_UNKNOWN",
        `No task type "${task.type}" is registered on this node; register it on every worker node.`,
      ),
    );
    await d.store.finishAdvance(lease, taskId, { kind: "failed", error });
    return { kind: "failed", error, ...about };
  }
  const begun = await d.store.beginAdvance(lease, taskId);
  if (begun !== "started") return { kind: begun === "parked" ? "parked" : "skipped" };
  const logs: LogLine[] = [];
  const blobs = d.blobs;
  const payloads: PayloadBlobs | undefined =
    blobs && d.inlineMaxBytes ? { blobs, inlineMaxBytes: d.inlineMaxBytes } : undefined;
  // The task code sees values, never references: what was kept in the blob store is read back
  // (checked against its SHA-256) before the replay, so a replay runs on the same values.
  let input: unknown;
  const history: StoredStep[] = [];
  try {
    input = await loadPayload(blobs, task.tenantId, task.input);
    for (const s of loaded.history) {
      history.push(
        s.output === null ? s : { ...s, output: await loadPayload(blobs, task.tenantId, s.output) },
      );
    }
  } catch (err) {
    // Bytes missing or altered will not come back: the task fails, naming them, instead of
    // its advance retrying until it is dead. A blob store that cannot be reached is retried.
    if (!(err instanceof LonghaulError && err.code === "PAYLOAD_UNREADABLE")) throw err;
    const error = toErrorInfo(err);
    await d.store.finishAdvance(lease, taskId, { kind: "failed", error });
    return { kind: "failed", error, ...about };
  }
  const canceled = watchForCancel(d.store, taskId);
  let result: RunResult;
  try {
    result = await runTask({
      fn: type.run,
      input,
      ctx: {
        taskId,
        tenantId: task.tenantId,
        type: task.type,
        userId: task.userId,
        traceId: task.traceId,
        ...(d.taskFiles ? { files: d.taskFiles(task.tenantId) } : {}),
        ...(d.taskIndex ? { index: d.taskIndex(who) } : {}),
      },
      signal: canceled.signal,
      history,
      ports: {
        // A large result's bytes are durable before the row that names them (§3.8).
        storeRunOutcome: async (o) =>
          d.store.storeRunOutcome(
            lease,
            taskId,
            o.status === "succeeded"
              ? { ...o, output: await storePayload(payloads, task.tenantId, o.output) }
              : o,
          ),
        registerWait: async (w) => {
          const stored = await d.store.registerWait(
            lease,
            taskId,
            w.kind === "job" ? { ...w, pollAfterMs: w.pollAfterMs ?? d.pollAfterMs } : w,
          );
          waits.push(w.kind);
          return stored;
        },
        callbackUrl: (s) => d.urls.callback(task.tenantId, taskId, s),
        markHandedOff: (stepId) => d.store.markHandedOff(lease, taskId, stepId),
        ...(blobs
          ? {
              writeArtifact: (data) =>
                writeArtifact(
                  { blobs, maxBytes: d.artifactLimits?.maxBytes },
                  { tenantId: task.tenantId, taskId, data },
                ),
              storeArtifact: (artifact) =>
                recordArtifact(
                  {
                    store: d.store,
                    blobs,
                    clock: d.clock,
                    storageQuotaBytes: d.artifactLimits?.storageQuotaBytes,
                  },
                  { lease, tenantId: task.tenantId, taskId, artifact },
                ),
              renderReport: renderReportPdf,
            }
          : {}),
        log: (line) => {
          logs.push(line);
          d.onLog?.(line, who);
        },
      },
      maxAttempts: type.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      advanceAttempt: a.attempts,
      strictOrder: type.strictOrder ?? true,
      defaultWaitMs: d.defaultWaitMs,
      defaultTimeoutMs: d.defaultTimeoutMs,
      ...(d.notify ? { notify: notifyContext(d.notify) } : {}),
      clock: d.clock,
      ...(d.random ? { random: d.random } : {}),
    });
  } finally {
    canceled.stop();
  }
  if (result.kind === "retry") {
    await d.store.finishAdvance(lease, taskId, {
      kind: "retry",
      runAt: d.clock.now() + result.delayMs,
      error: result.error,
      logs,
    });
    return { ...result, ...about };
  }
  const stored =
    result.kind === "succeeded"
      ? { ...result, output: await storePayload(payloads, task.tenantId, result.output) }
      : result;
  await d.store.finishAdvance(lease, taskId, { ...stored, logs });
  return { ...result, ...about };
}

/** How often a running task function checks whether its task was canceled. */
const CANCEL_CHECK_MS = 1000;

/**
 * The `signal` of a run: aborted when the task is found canceled. While the function runs,
 * the task's status alone is read from the store every second (a cancel may come through any
 * node, so a read of the store is what sees it everywhere); most runs end before the first read.
 */
function watchForCancel(tasks: AdvanceStore, taskId: string): { signal: AbortSignal; stop: () => void } {
  const ac = new AbortController();
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    tasks
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
