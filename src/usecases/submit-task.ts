import { LonghaulError } from "../core/errors.ts";
import type { UrlPolicy } from "../core/file-refs.ts";
import { describeThrown } from "../core/json-input.ts";
import type { NotifyContext } from "../core/notification.ts";
import { startRequest } from "../core/start-at.ts";
import type { TaskType } from "../core/task-type.ts";
import { graphNotifyProblem } from "../graph/graph-notify.ts";
import type { FileStore, NewTask, TaskRow, TaskStore } from "../store/store.ts";
import { checkInputRefs } from "./check-input-refs.ts";
import { type PayloadBlobs, storePayload } from "./payloads.ts";
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
  /** A delayed start: an ISO 8601 time (a past one runs now), or a delay such as "10m"; not both. */
  runAt?: string | null;
  delay?: string | null;
}

/**
 * Submits a task: the type must be registered and accept the input (its schema's output is
 * what is stored); then one store transaction checks the tenant's quotas, writes the task
 * (unique by tenant + client request id) and queues its first advance. `created` is false when an earlier submit with the same id won.
 * A schema that fails in itself (throws, takes over `schemaTimeoutMs`, answers an output JSON
 * cannot carry) is TASK_SCHEMA_FAILED (see `schemaInput`). File references in the input (any
 * type's) are checked before anything is stored: FILE_NOT_FOUND, URL_NOT_ALLOWED (`checkInputRefs`).
 */
export async function submitTask(
  d: SubmitTaskDeps,
  s: SubmitTaskInput,
): Promise<{ task: TaskRow; created: boolean }> {
  const stored = await checkSubmit(d, s);
  // A large input's bytes are durable before the row that names them (§3.8); they are named by
  // their SHA-256, so a duplicate submit writes the same blob and is compared by it.
  const kept = await storePayload(d.payloads, s.tenantId, stored);
  return d.tasks.submitTask(newTask(s, kept));
}

/** The row a checked submit writes, its input as kept (`storePayload`). */
export function newTask(s: SubmitTaskInput, kept: unknown): NewTask {
  return {
    tenantId: s.tenantId,
    type: s.type,
    input: kept,
    clientRequestId: s.clientRequestId ?? null,
    userId: s.userId ?? null,
    traceId: s.traceId ?? null,
    start: startRequest(s.runAt, s.delay),
  };
}

/** What a submit reads besides the request. */
export interface SubmitTaskDeps {
  tasks: TaskStore;
  taskTypes: TaskTypeLookup;
  schemaTimeoutMs?: number;
  /** Where `{"file_id"}` references in the input are looked up; without it they are not checked. */
  files?: Pick<FileStore, "getFile">;
  urlPolicy?: UrlPolicy;
  /** Where an input longer than `limits.inline_max_bytes` is kept (ARCHITECTURE §4.10). */
  payloads?: PayloadBlobs;
  /** The deployment's notifiers: a graph's approval channels are checked against them. */
  notify?: NotifyContext;
}

/**
 * Everything a submit checks before it writes (the type, its schema and `validate`, a graph's
 * channels, file references), without writing anything. Answers the input to store: the
 * schema's output when the type has a schema.
 */
export async function checkSubmit(d: SubmitTaskDeps, s: SubmitTaskInput): Promise<unknown> {
  startRequest(s.runAt, s.delay);
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
  if (d.notify && s.type === "graph") {
    const problem = graphNotifyProblem(input, d.notify);
    if (problem !== null)
      throw new LonghaulError("VALIDATION_FAILED", `Input for graph is not valid: ${problem}.`);
  }
  if (d.files) {
    await checkInputRefs(
      { files: d.files, urlPolicy: d.urlPolicy ?? { allowPrivateNetworks: false } },
      s.tenantId,
      stored,
    );
  }
  return stored;
}
