import { LonghaulError } from "../core/errors.ts";
import { parseInstant } from "../core/instant.ts";
import { isTaskStatus } from "../core/task.ts";
import type { TaskRow, TaskStore } from "../store/store.ts";

export interface ListTasksInput {
  tenantId: string;
  status?: string | undefined;
  type?: string | undefined;
  userId?: string | undefined;
  traceId?: string | undefined;
  /** ISO 8601: created at or after it. */
  createdAfter?: string | undefined;
  /** ISO 8601: created before it. */
  createdBefore?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

/**
 * A page of a tenant's tasks, newest first. An unknown status, a time that is not ISO 8601 with
 * its offset, or `createdAfter` later than `createdBefore` is VALIDATION_FAILED; the limit is
 * kept within 1..200.
 */
export async function listTasks(
  d: { tasks: TaskStore },
  q: ListTasksInput,
): Promise<{ tasks: TaskRow[]; nextCursor: string | null }> {
  if (q.status !== undefined && !isTaskStatus(q.status)) {
    throw new LonghaulError("VALIDATION_FAILED", `Unknown status "${q.status}".`);
  }
  const from = q.createdAfter ? parseInstant("created_after", q.createdAfter) : undefined;
  const before = q.createdBefore ? parseInstant("created_before", q.createdBefore) : undefined;
  if (from !== undefined && before !== undefined && from > before) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `"created_after" (${q.createdAfter}) is later than "created_before" (${q.createdBefore}); swap them.`,
    );
  }
  const limit = Math.min(MAX_LIMIT, Math.max(1, Math.trunc(q.limit ?? DEFAULT_LIMIT) || DEFAULT_LIMIT));
  return d.tasks.listTasks(q.tenantId, {
    status: q.status,
    type: q.type,
    userId: q.userId,
    traceId: q.traceId,
    createdFrom: from,
    createdBefore: before,
    limit,
    cursor: q.cursor,
  });
}
