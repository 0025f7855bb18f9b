import type { Logger } from "pino";
import type { Static } from "typebox";
import { LonghaulError } from "../core/errors.ts";
import type { UrlPolicy } from "../core/file-refs.ts";
import type { NotifyContext } from "../core/notification.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { FileStore, NotificationStore, TaskRow, TaskStore, WaitStore } from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";
import { cancelTask } from "../usecases/cancel-task.ts";
import { getTask } from "../usecases/get-task.ts";
import { listTasks } from "../usecases/list-tasks.ts";
import type { PayloadBlobs } from "../usecases/payloads.ts";
import { submitTask, type TaskTypeLookup } from "../usecases/submit-task.ts";
import { submitTasks } from "../usecases/submit-tasks.ts";
import type {
  CancelResult,
  SubmitBatchBody,
  SubmitBatchResult,
  SubmitBody,
  SubmitResult,
  TaskDetail,
  TaskListQuery,
  TaskPage,
} from "../wire/tasks.ts";
import { detailView, linkedView } from "./payload-view.ts";
import { taskDetail, taskSummary } from "./serialize.ts";

export interface TaskActionDeps {
  store: TaskStore & WaitStore & Pick<NotificationStore, "notificationsOf">;
  taskTypes: TaskTypeLookup;
  urls: CapabilityUrls;
  metrics?: Metrics | undefined;
  /** Told of each task created, and of a task type's schema that failed (the operator's code). */
  log?: Pick<Logger, "info" | "warn"> | undefined;
  /** How long a task type's schema may take (`limits.schema_timeout_s`). */
  schemaTimeoutMs?: number | undefined;
  /** Where file references in submitted inputs are looked up; without it they are not checked. */
  files?: Pick<FileStore, "getFile"> | undefined;
  /** Which `{"url"}` references are allowed (`outbound.allow_private_networks` lets http and private hosts in). */
  urlPolicy?: UrlPolicy | undefined;
  /**
   * Where large values are kept (ARCHITECTURE §4.10): an input longer than `inlineMaxBytes` is
   * written there at submit, and `GET /v1/tasks/:id` reads values back up to
   * `inlineResponseMaxBytes`. Absent: every value stays in its row.
   */
  payloads?: (PayloadBlobs & { inlineResponseMaxBytes: number }) | undefined;
  /** The deployment's notifiers, against which a graph's approval channels are checked at submit. */
  notify?: NotifyContext | undefined;
}

/**
 * `POST /v1/tasks` without its transport: the body (already checked against `SubmitBody`)
 * in, the task submitted, the answer out. 202 for a new task, 200 for the one a
 * `client_request_id` (or an `Idempotency-Key`) already made.
 */
export async function submitAction(
  d: TaskActionDeps,
  tenantId: string,
  body: Static<typeof SubmitBody>,
  idempotencyKey?: string | undefined,
): Promise<{ status: 200 | 202; body: Static<typeof SubmitResult> }> {
  const { task, created } = await submitTask(submitDeps(d), {
    tenantId,
    type: body.type,
    input: body.input,
    clientRequestId: body.client_request_id ?? idempotencyKey ?? null,
    userId: body.user_id ?? null,
    traceId: body.trace_id ?? null,
    runAt: body.run_at ?? null,
    delay: body.delay ?? null,
  }).catch((err: unknown) => {
    // The client gets a 422 naming the type; the operator, whose code it is, gets the cause.
    if (err instanceof LonghaulError && err.code === "TASK_SCHEMA_FAILED") {
      d.log?.warn({ err: err.cause instanceof Error ? err.cause : err, type: body.type }, err.message);
    }
    throw err;
  });
  if (created) submitted(d, task);
  return { status: created ? 202 : 200, body: { task_id: task.id, status: task.status, created } };
}

/**
 * `POST /v1/tasks/batch` without its transport: every item checked as `POST /v1/tasks` checks
 * one, then all written in one transaction; the answers in the order given (always 202: a batch
 * may mix new tasks and ones a `client_request_id` already made, told apart by `created`).
 */
export async function submitBatchAction(
  d: TaskActionDeps,
  tenantId: string,
  body: Static<typeof SubmitBatchBody>,
): Promise<Static<typeof SubmitBatchResult>> {
  const made = await submitTasks(submitDeps(d), {
    tenantId,
    items: body.tasks.map((t) => ({
      type: t.type,
      input: t.input,
      clientRequestId: t.client_request_id ?? null,
      userId: t.user_id ?? null,
      traceId: t.trace_id ?? null,
    })),
  }).catch((err: unknown) => {
    if (err instanceof LonghaulError && err.code === "TASK_SCHEMA_FAILED") {
      d.log?.warn({ err: err.cause instanceof Error ? err.cause : err }, err.message);
    }
    throw err;
  });
  for (const { task, created } of made) if (created) submitted(d, task);
  return { tasks: made.map(({ task, created }) => ({ task_id: task.id, status: task.status, created })) };
}

/** What `submitTask` and `submitTasks` read, from the action's dependencies. */
function submitDeps(d: TaskActionDeps) {
  return {
    tasks: d.store,
    taskTypes: d.taskTypes,
    ...(d.schemaTimeoutMs === undefined ? {} : { schemaTimeoutMs: d.schemaTimeoutMs }),
    ...(d.files ? { files: d.files } : {}),
    ...(d.urlPolicy ? { urlPolicy: d.urlPolicy } : {}),
    ...(d.payloads ? { payloads: d.payloads } : {}),
    ...(d.notify ? { notify: d.notify } : {}),
  };
}

/** Counts and logs a task just created. */
function submitted(d: TaskActionDeps, task: TaskRow): void {
  d.metrics?.tasksSubmitted.inc({ type: task.type });
  d.log?.info(
    {
      task_id: task.id,
      tenant_id: task.tenantId,
      type: task.type,
      user_id: task.userId,
      trace_id: task.traceId,
    },
    "task submitted",
  );
}

/**
 * `GET /v1/tasks/:id`: the task with its steps, jobs and a waiting step's links; without the
 * links (`links: false`) for a reader holding a read token, whose links to large values expire
 * with that token (`linksExpireBy`).
 */
export async function getTaskAction(
  d: Pick<TaskActionDeps, "store" | "urls" | "payloads">,
  tenantId: string,
  taskId: string,
  links = true,
  linksExpireBy?: number,
): Promise<Static<typeof TaskDetail>> {
  const { detail, decisions, notifications } = await getTask(
    { tasks: d.store, waits: d.store, notifications: d.store },
    { tenantId, taskId },
  );
  const view = await detailView(d, detail, linksExpireBy);
  return taskDetail(detail, { urls: d.urls, decisions, notifications, links, view });
}

/** `GET /v1/tasks`: a page of the tenant's tasks, newest first. */
export async function listTasksAction(
  d: Pick<TaskActionDeps, "store" | "urls">,
  tenantId: string,
  q: Static<typeof TaskListQuery>,
): Promise<Static<typeof TaskPage>> {
  const page = await listTasks(
    { tasks: d.store },
    {
      tenantId,
      status: q.status,
      type: q.type,
      userId: q.user_id,
      traceId: q.trace_id,
      createdAfter: q.created_after,
      createdBefore: q.created_before,
      limit: q.limit ?? 50,
      cursor: q.cursor,
    },
  );
  return { data: page.tasks.map((t) => taskSummary(t, linkedView(d.urls, t))), next_cursor: page.nextCursor };
}

/** `POST /v1/tasks/:id/cancel`. */
export async function cancelAction(
  d: Pick<TaskActionDeps, "store">,
  tenantId: string,
  taskId: string,
): Promise<Static<typeof CancelResult>> {
  const t = await cancelTask({ tasks: d.store }, { tenantId, taskId });
  return { task_id: t.id, status: t.status };
}
