import { bulkRerunAction, rerunAction } from "../actions/rerun.ts";
import {
  cancelAction,
  getTaskAction,
  listTasksAction,
  submitAction,
  submitBatchAction,
  type TaskActionDeps,
} from "../actions/tasks.ts";
import { taskInScope } from "../usecases/mint-read-token.ts";
import { IdParams } from "../wire/common.ts";
import { BulkRerunBody, BulkRerunResult, RerunBody, RerunResult } from "../wire/rerun.ts";
import {
  CancelResult,
  SubmitBatchBody,
  SubmitBatchResult,
  SubmitBody,
  SubmitHeaders,
  SubmitResult,
  TaskDetail,
  TaskListQuery,
  TaskPage,
} from "../wire/tasks.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";
import { submitRateLimit } from "./submit-rate.ts";

/** `/v1/tasks`: submit, read, list, cancel, re-run. Every query is scoped by the caller's tenant (ARCHITECTURE §3.6). */
export function tasksRoutes(
  app: Api,
  deps: Omit<TaskActionDeps, "log"> & {
    /** `limits.submit_max_bytes`: the body limit of `POST /v1/tasks` and `POST /v1/tasks/batch` alone. */
    submitMaxBytes?: number;
  },
): void {
  app.post(
    "/v1/tasks",
    {
      ...(deps.submitMaxBytes === undefined ? {} : { bodyLimit: deps.submitMaxBytes }),
      preHandler: submitRateLimit(),
      schema: operation("Submit a task (idempotent by client_request_id or Idempotency-Key)", {
        body: SubmitBody,
        headers: SubmitHeaders,
        response: { 200: SubmitResult, 202: SubmitResult },
      }),
    },
    async (req, reply) => {
      const r = await submitAction(
        { ...deps, log: req.log },
        req.tenant.id,
        req.body,
        req.headers["idempotency-key"],
      );
      return reply.status(r.status).send(r.body);
    },
  );

  app.post(
    "/v1/tasks/batch",
    {
      ...(deps.submitMaxBytes === undefined ? {} : { bodyLimit: deps.submitMaxBytes }),
      // A batch of N counts N against the submit rate, as N single submits would.
      preHandler: submitRateLimit(Date.now, (req) => (req.body as { tasks: unknown[] }).tasks.length),
      schema: operation("Submit 1 to 1,000 tasks, all or nothing (each idempotent by client_request_id)", {
        body: SubmitBatchBody,
        response: { 202: SubmitBatchResult },
      }),
    },
    async (req, reply) =>
      reply.status(202).send(await submitBatchAction({ ...deps, log: req.log }, req.tenant.id, req.body)),
  );

  app.get(
    "/v1/tasks/:id",
    {
      // A read token of this task (or of its user) reads it too, without the wait links.
      config: { readToken: true },
      schema: operation("A task with its steps and jobs (API key, or a read token that opens it)", {
        params: IdParams,
        response: { 200: TaskDetail },
      }),
    },
    async (req) => {
      const scope = req.readScope;
      if (scope)
        await taskInScope({ tasks: deps.store }, { tenantId: req.tenant.id, scope, taskId: req.params.id });
      return getTaskAction(deps, req.tenant.id, req.params.id, scope === undefined, req.readExpiresAt);
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
    async (req) => listTasksAction(deps, req.tenant.id, req.query),
  );

  app.post(
    "/v1/tasks/:id/cancel",
    { schema: operation("Cancel a task", { params: IdParams, response: { 200: CancelResult } }) },
    async (req) => cancelAction(deps, req.tenant.id, req.params.id),
  );

  app.post(
    "/v1/tasks/:id/rerun",
    {
      preHandler: submitRateLimit(),
      schema: operation(
        "Re-run a failed, canceled or timed-out task as a new task (idempotent by client_request_id or Idempotency-Key)",
        {
          params: IdParams,
          body: RerunBody,
          headers: SubmitHeaders,
          response: { 200: RerunResult, 202: RerunResult },
        },
      ),
    },
    async (req, reply) => {
      const r = await rerunAction(
        { ...deps, log: req.log },
        req.tenant.id,
        req.params.id,
        req.body ?? {},
        req.headers["idempotency-key"],
      );
      return reply.status(r.status).send(r.body);
    },
  );

  app.post(
    "/v1/tasks/rerun",
    {
      preHandler: submitRateLimit(),
      schema: operation("Re-run the failed, canceled or timed-out tasks a filter matches, or count them", {
        body: BulkRerunBody,
        response: { 200: BulkRerunResult },
      }),
    },
    async (req) => bulkRerunAction(deps, req.tenant.id, req.body),
  );
}
