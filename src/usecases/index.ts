/**
 * The use cases: one module per action, shared by the HTTP routes, the worker and the CLI.
 * Each takes only the store roles and services it uses and a plain input, and returns a plain
 * result or throws `LonghaulError`.
 */
export { type ApplyJobEventResult, applyJobEvent, POLL_SOURCE } from "./apply-job-event.ts";
export { cancelTask } from "./cancel-task.ts";
export {
  type CompleteCallbackInput,
  type CompleteCallbackResult,
  completeCallback,
} from "./complete-callback.ts";
export { addApiKey, createTenant } from "./create-tenant.ts";
export { createWebhookEndpoint, newWebhookSecret } from "./create-webhook-endpoint.ts";
export {
  type ApprovalClaims,
  approvalClaims,
  type DecideApprovalInput,
  decideApproval,
  decisionOf,
} from "./decide-approval.ts";
export { deleteFile } from "./delete-file.ts";
export { type DeliverWebhookResult, deliverWebhook } from "./deliver-webhook.ts";
export { getFile, readFileContent } from "./get-file.ts";
export { getTask } from "./get-task.ts";
export { listFiles } from "./list-files.ts";
export { type ListTasksInput, listTasks } from "./list-tasks.ts";
export { mintReadTokenFor, readTokenClaims, taskInScope } from "./mint-read-token.ts";
export { type RecordWebhookResult, recordWebhook, sourceNamed } from "./record-webhook.ts";
export { refuseWait } from "./refuse-wait.ts";
export { DEFAULT_SECRET_OVERLAP_S, endpointNotFound, rotateWebhookSecret } from "./rotate-webhook-secret.ts";
export { type SendSignalInput, sendSignal } from "./send-signal.ts";
export { type SubmitTaskInput, submitTask, type TaskTypeLookup } from "./submit-task.ts";
export { updateTenant } from "./update-tenant.ts";
export { type UploadFileInput, uploadFile } from "./upload-file.ts";
