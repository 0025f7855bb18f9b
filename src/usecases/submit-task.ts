import { LonghaulError } from "../core/errors.ts";
import { describeThrown } from "../core/json-input.ts";
import type { TaskType } from "../core/task-type.ts";
import type { TaskRow, TaskStore } from "../store/store.ts";
import { DEFAULT_SCHEMA_TIMEOUT_MS, schemaInput } from "./schema-input.ts";

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
 * A schema that fails in itself (throws, takes over `schemaTimeoutMs`, answers an output JSON
 * cannot carry) is TASK_SCHEMA_FAILED (see `schemaInput`).
 */
export async function submitTask(
  d: { tasks: TaskStore; taskTypes: TaskTypeLookup; schemaTimeoutMs?: number },
  s: SubmitTaskInput,
): Promise<{ task: TaskRow; created: boolean }> {
  const type = d.taskTypes.get(s.type);
  let input: unknown = s.input === undefined ? {} : s.input;
  let stored: unknown = input;
  if (type.schema) {
    // Any Standard Schema; its validate may be async. Its output is what is stored and run.
    const parsed = await schemaInput(
      s.type,
      type.schema,
      input,
      d.schemaTimeoutMs ?? DEFAULT_SCHEMA_TIMEOUT_MS,
    );
    input = parsed.output;
    stored = parsed.stored;
  }
  if (type.validate) {
    try {
      type.validate(input);
    } catch (err) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `Input for ${s.type} is not valid: ${err instanceof Error ? err.message : describeThrown(err)}`,
      );
    }
  }
  return d.tasks.submitTask({
    tenantId: s.tenantId,
    type: s.type,
    input: stored,
    clientRequestId: s.clientRequestId ?? null,
    userId: s.userId ?? null,
    traceId: s.traceId ?? null,
  });
}
