// The library's public surface, `import { task } from "longhaul"` (ARCHITECTURE §5): what
// defining tasks needs (task definition, step types, errors, providers, graphs, the config
// file's type). It loads no server: `createLonghaul` lives on `longhaul/server`, with the
// HTTP server and the stores. `longhaul/client` (src/client) and `longhaul/testing`
// (src/testing.ts) are separate entries.
import type { Longhaul, LonghaulOptions } from "./app.ts";

export type {
  CancelAnswer,
  Longhaul,
  LonghaulOptions,
  RerunAnswer,
  RerunRequest,
  SignalAnswer,
  SignalRequest,
  SubmitAnswer,
  SubmitBatchAnswer,
  SubmitBatchRequest,
  SubmitRequest,
} from "./app.ts";
export { defineConfig, type LonghaulConfig } from "./config/define-config.ts";

/**
 * @deprecated Import it from `longhaul/server`; this re-export goes in the next minor release.
 * It loads the server (Fastify, the stores) only when called, so `import "longhaul"` stays light.
 */
export async function createLonghaul(opts?: LonghaulOptions): Promise<Longhaul> {
  return (await import("./app.ts")).createLonghaul(opts);
}
/** @deprecated Import `longhaul` (= `createLonghaul`) from `longhaul/server`. */
export const longhaul = createLonghaul;

export type { ChunkDraft, SourceSpan, TaskIndex } from "./core/chunk.ts";
export type { Clock } from "./core/clock.ts";
export type { Duration } from "./core/duration.ts";
export {
  type ErrorCode,
  LonghaulError,
  NonRetriableError,
  RetryAfterError,
  StepError,
} from "./core/errors.ts";
export type { FileRef, OpenedFile, TaskFiles } from "./core/file-refs.ts";
export type { JobStatus } from "./core/job.ts";
export type { ProviderEvent } from "./core/provider-event.ts";
export type { ReportOptions, ReportSection, ReportSource, ReportSpec } from "./core/report.ts";
export type { StandardSchemaV1 } from "./core/standard-schema.ts";
export type { StepStatus } from "./core/step.ts";
export type { BucketCredentials, StorageUrlsConfig } from "./core/storage-urls.ts";
export type { TaskStatus } from "./core/task.ts";
export type { LogLevel, TaskLog } from "./core/task-log.ts";
export {
  type ApprovalOptions,
  type ApprovalRequest,
  type ApprovalResult,
  type BatchItem,
  type BatchItemStatus,
  type BatchOptions,
  type BatchRequest,
  type BatchResult,
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
export type {
  CreatedJob,
  CreateJobRequest,
  FetchResultContext,
  JobSnapshot,
  Provider,
  ResultFiles,
} from "./providers/provider.ts";
export { JobResultFailure, ProviderError } from "./providers/provider.ts";
export { type SimProviderOptions, simProvider } from "./providers/sim/sim-provider.ts";
export type { Simulator, SimulatorOptions } from "./providers/sim/simulator.ts";
export {
  type ChunkOptions,
  chunkDocument,
  type DocumentKind,
  type TextChunk,
} from "./search/chunk-document.ts";
export { chunkPdfPages } from "./search/chunk-pdf.ts";
export { type Embedder, embedChecked } from "./search/embedder.ts";
export { hashedNgramEmbedder } from "./search/hashed-ngram-embedder.ts";
export { looksLikePdf, pdfPages } from "./search/pdf-pages.ts";

/**
 * @deprecated Import it from `longhaul/testing`; this re-export goes in the next minor release.
 * It loads the simulator (and its SQLite file) only when called.
 */
export async function startSimulator(
  options: import("./providers/sim/simulator.ts").SimulatorOptions,
): Promise<import("./providers/sim/simulator.ts").Simulator> {
  return (await import("./providers/sim/simulator.ts")).startSimulator(options);
}
