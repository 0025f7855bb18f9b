// The library's public surface: `import { longhaul, defineTask } from "longhaul"`.
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
  defineTask,
  type JobOptions,
  type StepApi,
  type TaskContext,
  type TaskType,
} from "./core/task-type.ts";
export type { CreateJobRequest, Provider } from "./providers/provider.ts";
export { ProviderError } from "./providers/provider.ts";
export { simProvider } from "./providers/sim/sim-provider.ts";
export { type Simulator, startSimulator } from "./providers/sim/simulator.ts";
