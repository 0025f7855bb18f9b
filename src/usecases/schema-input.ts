import { LonghaulError } from "../core/errors.ts";
import { describeThrown, toJsonText } from "../core/json-input.ts";
import { describeIssues, issuePath, type StandardSchemaV1 } from "../core/standard-schema.ts";

/** How long a task type's schema may take to check an input, unless told (`limits.schema_timeout_s`). */
export const DEFAULT_SCHEMA_TIMEOUT_MS = 5000;

const TIMED_OUT: unique symbol = Symbol("timed out");

/**
 * The refusal for a schema that fails in itself rather than finding the input wrong: the
 * task type's code is at fault, so it is named, and the client is told nothing was stored.
 */
function schemaFailed(type: string, what: string, cause?: unknown): LonghaulError {
  return new LonghaulError(
    "TASK_SCHEMA_FAILED",
    `The schema of task type ${type} ${what}; nothing was stored. The task type's schema must be fixed for this input.`,
    cause === undefined ? undefined : { cause },
  );
}

/** `p`'s value, or TIMED_OUT once `ms` have passed; the timer is cleared either way. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(resolve, ms, TIMED_OUT);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks `input` with a task type's Standard Schema. Answers its output as the schema gave
 * it, and `stored`: that output read back from its JSON, which is what the store keeps and
 * the function runs with. Input the schema finds wrong is VALIDATION_FAILED naming the
 * field. A schema that throws, answers something that is no Standard Schema result, takes
 * longer than `timeoutMs`, or answers an output JSON cannot carry (a BigInt, a cycle, NaN) is
 * TASK_SCHEMA_FAILED, a 422: it is the task type's fault, so never a 5xx, and the request is
 * answered. A schema still running at the time limit is not stopped, only no longer awaited.
 */
export async function schemaInput(
  type: string,
  schema: StandardSchemaV1,
  input: unknown,
  timeoutMs: number,
): Promise<{ output: unknown; stored: unknown }> {
  let result: unknown;
  try {
    // A schema that throws at once is caught here too, not only one whose promise rejects.
    result = await within(
      Promise.resolve().then(() => schema["~standard"].validate(input)),
      timeoutMs,
    );
  } catch (err) {
    throw schemaFailed(type, `threw ${describeThrown(err)}`, err);
  }
  if (result === TIMED_OUT) {
    throw schemaFailed(type, `took longer than ${timeoutMs / 1000} s to check the input and was given up`);
  }
  let issues: string | null = null;
  let param = "input";
  let output: unknown;
  try {
    if (typeof result !== "object" || result === null) throw new TypeError(`it is ${String(result)}`);
    const r = result as { issues?: unknown; value?: unknown };
    if (r.issues) {
      if (!Array.isArray(r.issues)) throw new TypeError("its issues are not a list");
      issues = describeIssues(r.issues);
      param = issuePath((r.issues[0] as StandardSchemaV1.Issue | undefined)?.path);
    } else output = r.value;
  } catch (err) {
    throw schemaFailed(
      type,
      `answered something that is not a Standard Schema result (${describeThrown(err)})`,
    );
  }
  if (issues !== null) {
    throw new LonghaulError("VALIDATION_FAILED", `Input for ${type} is not valid: ${issues}`, { param });
  }
  const json = toJsonText(output);
  if (!json.ok) throw schemaFailed(type, `answered an output that ${json.problem}`);
  return { output, stored: JSON.parse(json.text) };
}
