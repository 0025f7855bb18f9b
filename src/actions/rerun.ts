import type { Static } from "typebox";
import { rerunTask } from "../usecases/rerun-task.ts";
import { rerunTasks } from "../usecases/rerun-tasks.ts";
import type { BulkRerunBody, BulkRerunResult, RerunBody, RerunResult } from "../wire/rerun.ts";
import type { TaskActionDeps } from "./tasks.ts";

/**
 * `POST /v1/tasks/:id/rerun`: 202 for a new re-run, 200 for the one a `client_request_id` (or an
 * `Idempotency-Key`) already made.
 */
export async function rerunAction(
  d: Pick<TaskActionDeps, "store" | "taskTypes" | "metrics" | "log">,
  tenantId: string,
  taskId: string,
  body: Static<typeof RerunBody>,
  idempotencyKey?: string | undefined,
): Promise<{ status: 200 | 202; body: Static<typeof RerunResult> }> {
  const r = await rerunTask(
    { tasks: d.store, taskTypes: d.taskTypes },
    { tenantId, taskId, from: body.from, clientRequestId: body.client_request_id ?? idempotencyKey ?? null },
  );
  if (r.created) {
    d.metrics?.tasksSubmitted.inc({ type: r.task.type });
    d.log?.info({ task_id: r.task.id, tenant_id: tenantId, rerun_of: taskId }, "task re-run");
  }
  return {
    status: r.created ? 202 : 200,
    body: {
      task_id: r.task.id,
      status: r.task.status,
      rerun_of: taskId,
      created: r.created,
      reused_steps: r.reusedSteps,
    },
  };
}

/** `POST /v1/tasks/rerun`: re-runs the tenant's tasks that match a filter, or counts them. */
export async function bulkRerunAction(
  d: Pick<TaskActionDeps, "store" | "taskTypes">,
  tenantId: string,
  body: Static<typeof BulkRerunBody>,
): Promise<Static<typeof BulkRerunResult>> {
  const r = await rerunTasks(
    { tasks: d.store, taskTypes: d.taskTypes },
    {
      tenantId,
      filter: {
        status: body.filter.status,
        type: body.filter.type,
        createdAfter: body.filter.created_after,
        createdBefore: body.filter.created_before,
      },
      from: body.from,
      limit: body.limit,
      dryRun: body.dry_run,
    },
  );
  return {
    matched: r.matched,
    data: r.reruns.map((x) => ({ task_id: x.taskId, rerun_of: x.rerunOf })),
    dry_run: body.dry_run === true,
    more: r.more,
  };
}
