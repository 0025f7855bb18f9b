import type { Duration } from "./duration.ts";

/** What a `step.run` callback is given. */
export interface RunContext {
  /** Stable across attempts and replays: pass it to outside systems for exactly-once effects (DESIGN §3.2). */
  idempotencyKey: string;
  /** 1 on the first attempt. */
  attempt: number;
}

export interface JobOptions {
  /** Provider name, e.g. `"sim"`. */
  provider: string;
  /** The provider's job input. */
  input: unknown;
  /** How long to wait for the job to end before the step times out. */
  timeout?: Duration;
  /** With no terminal webhook by then, the reconciler starts asking the provider (DESIGN §2). */
  pollAfter?: Duration;
}

/** The step API a task function receives. Every call is memoized by its `id`. */
export interface StepApi {
  /** Runs `fn` once; on replay returns its stored outcome. */
  run<T>(id: string, fn: (ctx: RunContext) => T | Promise<T>): Promise<Awaited<T>>;
  /** Dispatches an external job and suspends until it ends; returns its output or throws its failure. */
  job<T = unknown>(id: string, options: JobOptions): Promise<T>;
}

export interface TaskContext {
  taskId: string;
  tenantId: string;
  type: string;
  userId: string | null;
  traceId: string | null;
}

export type TaskFunction<I = any, O = any> = (input: I, step: StepApi, ctx: TaskContext) => Promise<O>;

export interface TaskType<I = any, O = any> {
  name: string;
  run: TaskFunction<I, O>;
  /** Attempts per `step.run` (and per advance for errors outside steps) before failing. Default 4. */
  maxAttempts?: number;
  /** Validates input at submit time; throw to refuse it with 400. */
  validate?: (input: unknown) => void;
}

/** Declares a task type: `defineTask("report", async (input, step) => …)`. */
export function defineTask<I = any, O = any>(
  name: string,
  run: TaskFunction<I, O>,
  options: Omit<TaskType<I, O>, "name" | "run"> = {},
): TaskType<I, O> {
  return { name, run, ...options };
}
