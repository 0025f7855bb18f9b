import { LonghaulError } from "../core/errors.ts";
import { describeIssues } from "../core/standard-schema.ts";
import type { TaskType } from "../core/task-type.ts";
import type { TaskRow, TaskStore } from "../store/store.ts";

/** The task types a node knows; `get` throws TASK_TYPE_UNKNOWN for a name it does not. */
export interface TaskTypeLookup {
  get(name: string): TaskType;
}

export interface SubmitTaskInput {
  tenantId: string;
  type: string;
  /** The task's input; absent means `{}`. */
  input?: unknown;
  /** Idempotency: the same id from the same tenant returns the first task. */
  clientRequestId?: string | null;
  userId?: string | null;
  traceId?: string | null;
}

/**
 * Submits a task: the type must be registered and accept the input (its schema's output is
 * what is stored); then one store transaction checks the tenant's quotas, writes the task
 * (unique by tenant + client request id) and queues its first advance. `created` is false when an earlier submit with the same id won.
 */
export async function submitTask(
  d: { tasks: TaskStore; taskTypes: TaskTypeLookup },
  s: SubmitTaskInput,
): Promise<{ task: TaskRow; created: boolean }> {
  const type = d.taskTypes.get(s.type);
  let input = s.input === undefined ? {} : s.input;
  if (type.schema) {
    // Any Standard Schema; its validate may be async. Its output is what is stored and run.
    const result = await type.schema["~standard"].validate(input);
    if (result.issues) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `Input for ${s.type} is not valid: ${describeIssues(result.issues)}`,
      );
    }
    input = result.value;
  }
  if (type.validate) {
    try {
      type.validate(input);
    } catch (err) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `Input for ${s.type} is not valid: ${(err as Error).message}`,
      );
    }
  }
  return d.tasks.submitTask({
    tenantId: s.tenantId,
    type: s.type,
    input,
    clientRequestId: s.clientRequestId ?? null,
    userId: s.userId ?? null,
    traceId: s.traceId ?? null,
  });
}
