// The library's public surface, `import { defineTask } from "longhaul"` (ARCHITECTURE §5): task
// definition, step types, errors, providers. The server side also has its own entry,
// `longhaul/server`; `createLonghaul` stays here too so existing imports keep working.
// `longhaul/client` (src/client) and `longhaul/testing` (src/testing.ts) are separate entries.
export { createLonghaul, createLonghaul as longhaul, type Longhaul, type LonghaulOptions } from "./app.ts";
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
export type { StepStatus } from "./core/step.ts";
export type { TaskStatus } from "./core/task.ts";
export {
  type ApprovalOptions,
  type ApprovalRequest,
  type ApprovalResult,
  type CallbackOptions,
  defineTask,
  type JobOptions,
  type StepApi,
  type TaskContext,
  type TaskFunction,
  type TaskType,
  type WaitForEventOptions,
} from "./core/task-type.ts";
// The object-style task definition and the typed config function are exported here, beside
// defineTask: `task` and `defineConfig`.
export type { GraphNode, GraphSpec, NodeKind } from "./graph/graph-spec.ts";
export { type GraphOutput, graphTask } from "./graph/graph-task.ts";
export { type GeminiProviderOptions, geminiProvider } from "./providers/gemini/gemini-provider.ts";
export { type HttpProviderOptions, httpProvider } from "./providers/http/http-provider.ts";
export { type OpenAIProviderOptions, openaiProvider } from "./providers/openai/openai-provider.ts";
export type { CreatedJob, CreateJobRequest, JobSnapshot, Provider } from "./providers/provider.ts";
export { ProviderError } from "./providers/provider.ts";
export { type SimProviderOptions, simProvider } from "./providers/sim/sim-provider.ts";
export { type Simulator, type SimulatorOptions, startSimulator } from "./providers/sim/simulator.ts";
