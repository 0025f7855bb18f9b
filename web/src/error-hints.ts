import type { ErrorInfo } from "../../src/client/index.ts";

/** What a person can do about an error, by its stable code (ARCHITECTURE §6). */
const hints: Record<string, string> = {
  JOB_FAILED:
    "The provider reported that the job failed. Read its error below; fix the input and submit the task again with a new client_request_id.",
  JOB_CANCELED: "The job was canceled at the provider. Submit the task again if the work is still needed.",
  JOB_TIMED_OUT:
    "No result came before the deadline. Check the Admin inbox for unmatched events (a webhook that could not be matched to its job), then raise the step's timeout or submit again.",
  STEP_TIMED_OUT:
    "Nothing arrived before the step's deadline. A result that comes later is kept as a late result and not applied; submit again or raise the timeout.",
  PROVIDER_ERROR:
    "The provider refused or failed the call. Retriable failures are retried with backoff; otherwise check the provider's configuration and credentials.",
  PROVIDER_UNKNOWN:
    "No provider of that name is configured on the workers. Add it to the config's providers, restart, then submit again.",
  TASK_TYPE_UNKNOWN:
    "No worker knows this task type. Register it in the config's taskTypes on every node that runs workers.",
  STEP_ORDER_MISMATCH:
    "On resume, the task code called its steps in a different order than the first time. Keep step calls deterministic (no branching on time or randomness outside step.run).",
  STEP_ID_DUPLICATE: "Two steps of the task use the same id. Give each step a unique id.",
  TASK_CODE_ERROR:
    "The task function threw. Retriable errors are retried with backoff; fix the code and submit again if it keeps failing.",
  NON_RETRIABLE: "The task code gave up on purpose (NonRetriableError). Read the message; it says why.",
  VALIDATION_FAILED: "The input was refused. Fix the field named in the message and submit again.",
  WAIT_CANCELED: "The task was canceled while this step waited.",
  TASK_CANCELED: "Someone canceled the task.",
  QUOTA_EXCEEDED:
    "The tenant's quota stopped new work. Wait for the quota window or ask an admin to raise it.",
  BUDGET_EXCEEDED:
    "The tenant's token budget is spent. An admin can raise token_budget; parked work resumes at once.",
};

/** The hint for `e`; `kind` is the kind of step it came from, when known. */
export function hintFor(e: ErrorInfo, kind?: string): string {
  return (
    hints[e.code] ??
    (kind === "job"
      ? `The provider failed the job with its own code (${e.code}). Read its message; fix the input or the provider's side, then submit the task again with a new client_request_id.`
      : undefined) ??
    (e.retriable
      ? "This error is retriable: longhaul retries it with backoff. Nothing to do unless it keeps coming back."
      : "Read the message above: it says what happened and what to change.")
  );
}
