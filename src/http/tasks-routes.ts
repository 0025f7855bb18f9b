import { LonghaulError } from "../core/errors.ts";
import type { Registry } from "../core/registry.ts";
import type { TaskType } from "../core/task-type.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { TaskStore, WaitStore } from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";
import { cancelTask } from "../usecases/cancel-task.ts";
import { getTask } from "../usecases/get-task.ts";
import { listTasks } from "../usecases/list-tasks.ts";
import { submitTask } from "../usecases/submit-task.ts";
import { IdParams } from "../wire/common.ts";
import {
  CancelResult,
  SubmitBody,
  SubmitHeaders,
  SubmitResult,
  TaskDetail,
  TaskListQuery,
  TaskPage,
} from "../wire/tasks.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";
import { taskDetail, taskSummary } from "./serialize.ts";
import { submitRateLimit } from "./submit-rate.ts";

/** `/v1/tasks`: submit, read, list, cancel. Every query is scoped by the caller's tenant (ARCHITECTURE §3.6). */
export function tasksRoutes(
  app: Api,
  store: TaskStore & WaitStore,
  taskTypes: Registry<TaskType>,
  urls: CapabilityUrls,
  metrics?: Metrics,
  schemaTimeoutMs?: number,
): void {
  app.post(
    "/v1/tasks",
    {
      preHandler: submitRateLimit(),
      schema: operation("Submit a task (idempotent by client_request_id or Idempotency-Key)", {
        body: SubmitBody,
        headers: SubmitHeaders,
        response: { 200: SubmitResult, 202: SubmitResult },
      }),
    },
    async (req, reply) => {
      const b = req.body;
      const { task, created } = await submitTask(
        { tasks: store, taskTypes, ...(schemaTimeoutMs === undefined ? {} : { schemaTimeoutMs }) },
        {
          tenantId: req.tenant.id,
          type: b.type,
          input: b.input,
          clientRequestId: b.client_request_id ?? req.headers["idempotency-key"] ?? null,
          userId: b.user_id ?? null,
          traceId: b.trace_id ?? null,
        },
      ).catch((err: unknown) => {
        // The client gets a 422 naming the type; the operator, whose code it is, gets the cause.
        if (err instanceof LonghaulError && err.code === "TASK_SCHEMA_FAILED") {
          req.log.warn({ err: err.cause instanceof Error ? err.cause : err, type: b.type }, err.message);
        }
        throw err;
      });
      if (created) {
        metrics?.tasksSubmitted.inc({ type: task.type });
        req.log.info(
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
      return reply.status(created ? 202 : 200).send({ task_id: task.id, status: task.status, created });
    },
  );

  app.get(
    "/v1/tasks/:id",
    {
      schema: operation("A task with its steps and jobs", {
        params: IdParams,
        response: { 200: TaskDetail },
      }),
    },
    async (req) => {
      const { detail, decisions } = await getTask(
        { tasks: store, waits: store },
        { tenantId: req.tenant.id, taskId: req.params.id },
      );
      return taskDetail(detail, { urls, decisions });
    },
  );

  app.get(
    "/v1/tasks",
    {
      schema: operation("List tasks, newest first", {
        querystring: TaskListQuery,
        response: { 200: TaskPage },
      }),
    },
    async (req) => {
      const q = req.query;
      const page = await listTasks(
        { tasks: store },
        {
          tenantId: req.tenant.id,
          status: q.status,
          type: q.type,
          userId: q.user_id,
          traceId: q.trace_id,
          limit: q.limit ?? 50,
          cursor: q.cursor,
        },
      );
      return { data: page.tasks.map(taskSummary), next_cursor: page.nextCursor };
    },
  );

  app.post(
    "/v1/tasks/:id/cancel",
    { schema: operation("Cancel a task", { params: IdParams, response: { 200: CancelResult } }) },
    async (req) => {
      const t = await cancelTask({ tasks: store }, { tenantId: req.tenant.id, taskId: req.params.id });
      return { task_id: t.id, status: t.status };
    },
  );
}
