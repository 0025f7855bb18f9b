import { LonghaulError } from "../core/errors.ts";
import type { TaskRow } from "../store/store.ts";
import { storePayload } from "./payloads.ts";
import { checkSubmit, newTask, type SubmitTaskDeps, type SubmitTaskInput } from "./submit-task.ts";

/** The most tasks one batch may hold (issue #34). */
export const SUBMIT_BATCH_MAX = 1000;

/** The refusals of one item that are the client's input at fault: the batch answers them as a 400. */
const itemRefusals = new Set(["TASK_TYPE_UNKNOWN", "VALIDATION_FAILED", "FILE_NOT_FOUND", "URL_NOT_ALLOWED"]);

/**
 * Submits a batch of tasks, all or nothing: every item is checked as a single submit checks it
 * before anything is written, so one bad item refuses the whole batch as VALIDATION_FAILED with
 * `param` naming it (`tasks[3].input.x`); then one store transaction writes them all, counting
 * each against the tenant's quotas. An item whose `client_request_id` an earlier submit used
 * answers that task (`created: false`); one id twice in the batch is refused, as the two items
 * would otherwise be one task answered twice. The answers are in the order given.
 */
export async function submitTasks(
  d: SubmitTaskDeps,
  s: { tenantId: string; items: readonly Omit<SubmitTaskInput, "tenantId">[] },
): Promise<{ task: TaskRow; created: boolean }[]> {
  if (s.items.length === 0 || s.items.length > SUBMIT_BATCH_MAX) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `A batch holds 1 to ${SUBMIT_BATCH_MAX} tasks, not ${s.items.length}.`,
      { param: "tasks" },
    );
  }
  const seen = new Map<string, number>();
  s.items.forEach((item, i) => {
    const id = item.clientRequestId;
    if (id == null) return;
    const first = seen.get(id);
    if (first !== undefined) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `tasks[${i}]: client_request_id "${id}" is also tasks[${first}]'s; each task of a batch needs its own.`,
        { param: `tasks[${i}].client_request_id` },
      );
    }
    seen.set(id, i);
  });
  const inputs = s.items.map((item) => ({ ...item, tenantId: s.tenantId }));
  const stored: unknown[] = [];
  // One after the other: a schema or a file lookup per item at a time, and the first refusal ends it.
  for (const [i, item] of inputs.entries()) {
    stored.push(await checkSubmit(d, item).catch((err: unknown) => Promise.reject(itemError(i, err))));
  }
  // Large inputs' bytes are durable before the rows that name them (§3.8), as for one submit.
  const rows = [];
  for (const [i, item] of inputs.entries()) {
    rows.push(newTask(item, await storePayload(d.payloads, s.tenantId, stored[i])));
  }
  return d.tasks.submitTasks(rows);
}

/** An item's refusal, named by its index in the batch. */
function itemError(i: number, err: unknown): unknown {
  if (!(err instanceof LonghaulError)) return err;
  const param = `tasks[${i}].${err.param ?? (err.code === "TASK_TYPE_UNKNOWN" ? "type" : "input")}`;
  const code = itemRefusals.has(err.code) ? "VALIDATION_FAILED" : err.code;
  // The single submit's code stays in the message and details, for a client that tells them apart.
  return new LonghaulError(code, `tasks[${i}]: ${err.message}`, {
    // The original's cause (a failing schema's throw) is what the operator's log wants.
    cause: err.cause ?? err,
    param,
    details: { ...err.details, index: i, item_code: err.code },
  });
}
