import type { FastifyInstance } from "fastify";
import { LonghaulError } from "../core/errors.ts";
import { isTaskStatus } from "../core/task-state.ts";
import type { TaskType } from "../core/task-type.ts";
import type { Registry } from "../engine/registry.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { ApprovalDecisionRow, Store } from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";
import { taskDetail, taskSummary } from "./serialize.ts";
import { submitRateLimit } from "./submit-rate.ts";

const MAX_KEY = 255;

function optionalString(body: Record<string, unknown>, field: string): string | null {
  const v = body[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== "string" || v.length === 0 || v.length > MAX_KEY || v.includes("\u0000")) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `"${field}" must be a string of 1 to ${MAX_KEY} characters.`,
    );
  }
  return v;
}

/** `/v1/tasks`: submit, read, list, cancel. Every query is scoped by the caller's tenant (ARCHITECTURE §3.6). */
export function tasksRoutes(
  app: FastifyInstance,
  store: Store,
  taskTypes: Registry<TaskType>,
  urls: CapabilityUrls,
  metrics?: Metrics,
): void {
  app.post("/v1/tasks", { preHandler: submitRateLimit() }, async (req, reply) => {
    const body = req.body;
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        'Send a JSON object such as {"type": "demo.echo", "input": {...}}.',
      );
    }
    const b = body as Record<string, unknown>;
    if (typeof b.type !== "string" || b.type.length === 0 || b.type.includes("\u0000")) {
      throw new LonghaulError("VALIDATION_FAILED", '"type" is required: the name of a registered task type.');
    }
    const type = taskTypes.get(b.type);
    const input = b.input === undefined ? {} : b.input;
    if (type.validate) {
      try {
        type.validate(input);
      } catch (err) {
        throw new LonghaulError(
          "VALIDATION_FAILED",
          `Input for ${b.type} is not valid: ${(err as Error).message}`,
        );
      }
    }
    const header = req.headers["idempotency-key"];
    const clientRequestId =
      optionalString(b, "client_request_id") ??
      optionalString({ "Idempotency-Key": Array.isArray(header) ? header[0] : header }, "Idempotency-Key");
    const { task, created } = await store.submitTask({
      tenantId: req.tenant.id,
      type: b.type,
      input,
      clientRequestId,
      userId: optionalString(b, "user_id"),
      traceId: optionalString(b, "trace_id"),
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
  });

  app.get<{ Params: { id: string } }>("/v1/tasks/:id", async (req) => {
    const d = await store.getTask(req.tenant.id, req.params.id);
    if (!d) throw new LonghaulError("TASK_NOT_FOUND", `No task ${req.params.id} for this API key.`);
    const decisions = new Map<string, ApprovalDecisionRow[]>();
    for (const s of d.steps) {
      if (s.kind === "approval") decisions.set(s.stepId, await store.approvalDecisions(d.task.id, s.stepId));
    }
    return taskDetail(d, { urls, decisions });
  });

  app.get<{ Querystring: Record<string, string | undefined> }>("/v1/tasks", async (req) => {
    const q = req.query;
    if (q.status !== undefined && !isTaskStatus(q.status)) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `"status" must be one of pending, running, waiting, succeeded, failed, canceled, timed_out.`,
      );
    }
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
      throw new LonghaulError("VALIDATION_FAILED", '"limit" must be a whole number from 1 to 200.');
    }
    const page = await store.listTasks(req.tenant.id, {
      status: q.status,
      type: q.type,
      userId: q.user_id,
      traceId: q.trace_id,
      limit,
      cursor: q.cursor,
    });
    return { data: page.tasks.map(taskSummary), next_cursor: page.nextCursor };
  });

  app.post<{ Params: { id: string } }>("/v1/tasks/:id/cancel", async (req) => {
    const t = await store.cancelTask(req.tenant.id, req.params.id);
    return { task_id: t.id, status: t.status };
  });
}
