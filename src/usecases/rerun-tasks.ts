import { LonghaulError } from "../core/errors.ts";
import { isRerunnable, rerunnableStatuses } from "../core/rerun.ts";
import { isTaskStatus, type TaskStatus } from "../core/task.ts";
import type { TaskStore } from "../store/store.ts";
import { listTasks } from "./list-tasks.ts";
import { rerunFrom, rerunTask } from "./rerun-task.ts";
import type { TaskTypeLookup } from "./submit-task.ts";

export interface RerunTasksInput {
  tenantId: string;
  filter: {
    status?: string | undefined;
    type?: string | undefined;
    createdAfter?: string | undefined;
    createdBefore?: string | undefined;
  };
  from?: string | undefined;
  /** At most this many re-runs (1..MAX_BULK_RERUNS, default DEFAULT_BULK_RERUNS). */
  limit?: number | undefined;
  /** Only find the tasks that would be re-run. */
  dryRun?: boolean | undefined;
}

export const DEFAULT_BULK_RERUNS = 20;
export const MAX_BULK_RERUNS = 100;
/** How many of the tenant's matching tasks one bulk re-run reads at most, per status. */
const MAX_SCANNED = 1000;
const PAGE = 200;

/** The client_request_id a bulk re-run gives each re-run: one bulk re-run per task, however often asked. */
export const bulkRerunRequestId = (taskId: string): string => `rerun:${taskId}`;

/**
 * Re-runs a tenant's tasks that match `filter` (ARCHITECTURE §4.4), newest first, up to
 * `limit`: failed, canceled and timed-out ones (or those of `filter.status`, which must be one
 * of them), skipping a task some task already re-runs, so a bulk re-run asked again re-runs
 * only what is new. Each re-run is idempotent by its own client_request_id
 * (`bulkRerunRequestId`), so two bulk re-runs racing make one re-run of each task. A task of
 * a type this node does not know is skipped (`taskTypes`). `matched`: the tasks chosen (all
 * a dry run answers); `more`: matching tasks were left for another call.
 */
export async function rerunTasks(
  d: { tasks: TaskStore; taskTypes?: TaskTypeLookup },
  r: RerunTasksInput,
): Promise<{ matched: string[]; reruns: { taskId: string; rerunOf: string }[]; more: boolean }> {
  const from = rerunFrom(r.from);
  const limit = Math.min(MAX_BULK_RERUNS, Math.max(1, Math.trunc(r.limit ?? DEFAULT_BULK_RERUNS)));
  const status = r.filter.status;
  if (status !== undefined && !(isTaskStatus(status) && isRerunnable(status))) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `"filter.status" is one of ${rerunnableStatuses.join(", ")}, not "${status}".`,
      { param: "filter.status" },
    );
  }
  const statuses: readonly TaskStatus[] = status === undefined ? rerunnableStatuses : [status as TaskStatus];
  const chosen: string[] = [];
  let more = false;
  for (const s of statuses) {
    let cursor: string | undefined;
    for (let scanned = 0; scanned < MAX_SCANNED; scanned += PAGE) {
      const page = await listTasks(d, {
        tenantId: r.tenantId,
        status: s,
        type: r.filter.type,
        createdAfter: r.filter.createdAfter,
        createdBefore: r.filter.createdBefore,
        limit: PAGE,
        cursor,
      });
      const done = await d.tasks.rerunTaskIds(
        r.tenantId,
        page.tasks.map((t) => t.id),
      );
      for (const t of page.tasks) {
        if (done.has(t.id) || (d.taskTypes && !knows(d.taskTypes, t.type))) continue;
        if (chosen.length === limit) {
          more = true;
          break;
        }
        chosen.push(t.id);
      }
      if (more || page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    if (more) break;
  }
  if (r.dryRun) return { matched: chosen, reruns: [], more };
  const made: { taskId: string; rerunOf: string }[] = [];
  for (const id of chosen) {
    const { task } = await rerunTask(
      { tasks: d.tasks },
      { tenantId: r.tenantId, taskId: id, from, clientRequestId: bulkRerunRequestId(id) },
    );
    made.push({ taskId: task.id, rerunOf: id });
  }
  return { matched: chosen, reruns: made, more };
}

function knows(types: TaskTypeLookup, name: string): boolean {
  try {
    types.get(name);
    return true;
  } catch {
    return false;
  }
}
