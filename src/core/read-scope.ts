import { LonghaulError } from "./errors.ts";

/**
 * What a read token opens (ARCHITECTURE §4.5): one task, or the tasks of one of the
 * tenant's users (`user_id` given at submit). A read token reads a task and follows its
 * events; it writes nothing and opens no other route.
 */
export type ReadScope = { taskId: string } | { userId: string };

/** Lifetimes of a read token, in seconds: long enough for a page to follow a task, short enough to leak little. */
export const READ_TOKEN_TTL_S = { default: 900, min: 60, max: 86_400 } as const;

/** The lifetime asked for, or the default; VALIDATION_FAILED outside the bounds. */
export function readTokenTtlS(ttl: number | undefined): number {
  if (ttl === undefined) return READ_TOKEN_TTL_S.default;
  const { min, max } = READ_TOKEN_TTL_S;
  if (!Number.isInteger(ttl) || ttl < min || ttl > max) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `ttl must be a whole number of seconds from ${min} to ${max}; got ${ttl}. Mint a new token when one runs out.`,
    );
  }
  return ttl;
}

/** Whether `scope` opens a task with this id and user. */
export function scopeOpens(scope: ReadScope, task: { id: string; userId: string | null }): boolean {
  return "taskId" in scope ? scope.taskId === task.id : scope.userId === task.userId;
}

/** The refusal of a read token for a task it does not open; the same whether the task exists or not. */
export function outOfScope(taskId: string): LonghaulError {
  return new LonghaulError(
    "TOKEN_SCOPE",
    `This read token does not open task ${taskId}; mint one for that task (POST /v1/tokens).`,
  );
}
