// The library's public surface, `import { task } from "longhaul"` (ARCHITECTURE §5): task
// definition, step types, errors, providers. The server side also has its own entry,
// `longhaul/server`; `createLonghaul` stays here too so existing imports keep working.
// `longhaul/client` (src/client) and `longhaul/testing` (src/testing.ts) are separate entries.
export {
  type CancelAnswer,
  createLonghaul,
  createLonghaul as longhaul,
  type Longhaul,
  type LonghaulOptions,
  type SignalAnswer,
  type SignalRequest,
  type SubmitAnswer,
  type SubmitRequest,
} from "./app.ts";
export { defineConfig, type LonghaulConfig } from "./cli/config.ts";
export type { Clock } from "./core/clock.ts";
export type { Duration } from "./core/duration.ts";
export {
  type ErrorCode,
  LonghaulError,
  NonRetriableError,
  RetryAfterError,
  StepError,
} from "./core/errors.ts";
export type { JobStatus } from "./core/job.ts";
export type { ProviderEvent } from "./core/provider-event.ts";
export type { StandardSchemaV1 } from "./core/standard-schema.ts";
export type { StepStatus } from "./core/step.ts";
export type { TaskStatus } from "./core/task.ts";
export type { LogLevel, TaskLog } from "./core/task-log.ts";
export {
  type ApprovalOptions,
  type ApprovalRequest,
  type ApprovalResult,
  type CallbackOptions,
  defineTask,
  type JobOptions,
  type RunArgs,
  type StepApi,
  type TaskContext,
  type TaskFunction,
  type TaskOptions,
  type TaskType,
  task,
  type WaitForEventOptions,
} from "./core/task-type.ts";
export type { GraphNode, GraphSpec, NodeKind } from "./graph/graph-spec.ts";
export { type GraphOutput, graphTask } from "./graph/graph-task.ts";
export { type GeminiProviderOptions, geminiProvider } from "./providers/gemini/gemini-provider.ts";
export { type HttpProviderOptions, httpProvider } from "./providers/http/http-provider.ts";
export { type OpenAIProviderOptions, openaiProvider } from "./providers/openai/openai-provider.ts";
export type { CreatedJob, CreateJobRequest, JobSnapshot, Provider } from "./providers/provider.ts";
export { ProviderError } from "./providers/provider.ts";
export { type SimProviderOptions, simProvider } from "./providers/sim/sim-provider.ts";
export { type Simulator, type SimulatorOptions, startSimulator } from "./providers/sim/simulator.ts";
