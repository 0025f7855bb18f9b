import { backoffMs } from "./backoff.ts";
import { toMs } from "./duration.ts";
import {
  type ErrorInfo,
  LonghaulError,
  NonRetriableError,
  RetryAfterError,
  StepError,
  toErrorInfo,
} from "./errors.ts";
import type { StepKind, StepStatus } from "./step-state.ts";
import type { JobOptions, RunContext, StepApi, TaskContext, TaskFunction } from "./task-type.ts";

/** A step as stored: the memo that replay reads. */
export interface StoredStep {
  stepId: string;
  position: number;
  kind: StepKind;
  status: StepStatus;
  output: unknown;
  error: ErrorInfo | null;
  attempts: number;
}

/** A `step.run` outcome to store before the task function may go on. */
export type RunOutcome =
  | { stepId: string; position: number; status: "succeeded"; output: unknown; attempts: number }
  | { stepId: string; position: number; status: "failed"; error: ErrorInfo; attempts: number }
  | { stepId: string; position: number; status: "running"; error: ErrorInfo; attempts: number };

/** A new wait the task function asked for; the engine registers it and suspends the task. */
export interface WaitRequest {
  kind: "job";
  stepId: string;
  position: number;
  provider: string;
  input: unknown;
  timeoutMs: number | null;
  pollAfterMs: number | null;
}

export type RunResult =
  | { kind: "succeeded"; output: unknown }
  | { kind: "failed"; error: ErrorInfo }
  | { kind: "suspended"; waits: WaitRequest[] }
  | { kind: "retry"; delayMs: number; error: ErrorInfo };

export interface RunTaskArgs {
  fn: TaskFunction;
  input: unknown;
  ctx: TaskContext;
  history: readonly StoredStep[];
  /** Stores a `step.run` outcome; awaited before the step resolves (DESIGN §3.2). */
  storeRunOutcome: (outcome: RunOutcome) => Promise<void>;
  maxAttempts: number;
  /** Attempt of the advance itself, for errors thrown outside any step. */
  advanceAttempt: number;
  random?: () => number;
}

const never = <T>(): Promise<T> => new Promise<T>(() => {});

/**
 * Runs a task function once, with replay: steps found in `history` return their stored
 * outcome without running; new `step.run` code executes and is stored; a new `step.job`
 * becomes a wait request and the function is abandoned at that point (it is re-run from the
 * top when the wait ends). Step calls must come in the same order on every run; a step at a
 * position that history gives to another id fails the task with STEP_ORDER_MISMATCH.
 *
 * The function is suspended when nothing more can happen: no `step.run` is executing, and it
 * is blocked on at least one wait, after the microtask queue has drained.
 */
export async function runTask(args: RunTaskArgs): Promise<RunResult> {
  const byPosition = new Map<number, StoredStep>();
  const byId = new Map<string, StoredStep>();
  for (const s of args.history) {
    byPosition.set(s.position, s);
    byId.set(s.stepId, s);
  }
  let position = 0;
  const seen = new Set<string>();
  const waits: WaitRequest[] = [];
  let blocked = 0;
  let inFlight = 0;
  let epoch = 0;
  let stop: RunResult | null = null;
  let wake: () => void = () => {};

  const poke = () => {
    epoch++;
    wake();
  };

  /** Claims the next position for `id`, or stops the run if the order diverges from history. */
  const claim = (id: string, kind: StepKind): { pos: number; stored: StoredStep | undefined } | null => {
    if (stop) return null;
    if (typeof id !== "string" || id.length === 0 || id.length > 200) {
      stop = fail("VALIDATION_FAILED", "A step id must be a non-empty string of at most 200 characters.");
      poke();
      return null;
    }
    if (seen.has(id)) {
      stop = fail(
        "STEP_ID_DUPLICATE",
        `Step id "${id}" is used twice in one run; give every step a unique id.`,
      );
      poke();
      return null;
    }
    seen.add(id);
    const pos = position++;
    const atPos = byPosition.get(pos);
    const stored = byId.get(id);
    if ((atPos && (atPos.stepId !== id || atPos.kind !== kind)) || (stored && stored.position !== pos)) {
      const was = atPos ? `"${atPos.stepId}" (${atPos.kind})` : "nothing";
      stop = fail(
        "STEP_ORDER_MISMATCH",
        `Step ${pos} is "${id}" (${kind}) but the stored history has ${was} there. Task code must call its steps in the same order on every run; start a new task for changed code.`,
      );
      poke();
      return null;
    }
    poke();
    return { pos, stored };
  };

  const replayOutcome = <T>(id: string, stored: StoredStep): Promise<T> => {
    if (stored.status === "succeeded") return Promise.resolve(stored.output as T);
    if (stored.status === "failed" || stored.status === "timed_out" || stored.status === "canceled") {
      return Promise.reject(
        new StepError(id, stored.error ?? { code: "STEP_FAILED", message: "step failed" }),
      );
    }
    blocked++;
    return never<T>();
  };

  const step: StepApi = {
    run: async <T>(id: string, fn: (c: RunContext) => T | Promise<T>): Promise<Awaited<T>> => {
      const c = claim(id, "run");
      if (!c) return never<Awaited<T>>();
      const { pos, stored } = c;
      if (stored && stored.status !== "running") return replayOutcome<Awaited<T>>(id, stored);
      const attempt = (stored?.attempts ?? 0) + 1;
      inFlight++;
      let outcome: RunOutcome;
      try {
        const output = await fn({ idempotencyKey: `${args.ctx.taskId}:${id}`, attempt });
        outcome = {
          stepId: id,
          position: pos,
          status: "succeeded",
          output: output ?? null,
          attempts: attempt,
        };
      } catch (err) {
        const info = toErrorInfo(err);
        const final = err instanceof NonRetriableError || attempt >= args.maxAttempts;
        outcome = final
          ? { stepId: id, position: pos, status: "failed", error: info, attempts: attempt }
          : { stepId: id, position: pos, status: "running", error: info, attempts: attempt };
        if (!final && !stop) {
          stop = { kind: "retry", delayMs: retryDelay(err, attempt, args.random), error: info };
        }
      }
      try {
        await args.storeRunOutcome(outcome);
      } finally {
        inFlight--;
        poke();
      }
      if (outcome.status === "succeeded") return outcome.output as Awaited<T>;
      if (outcome.status === "failed") throw new StepError(id, outcome.error);
      return never<Awaited<T>>();
    },

    job: <T>(id: string, options: JobOptions): Promise<T> => {
      const c = claim(id, "job");
      if (!c) return never();
      if (c.stored) return replayOutcome<T>(id, c.stored);
      if (!options || typeof options.provider !== "string") {
        stop = fail("VALIDATION_FAILED", `step.job("${id}") needs a provider name.`);
        poke();
        return never();
      }
      waits.push({
        kind: "job",
        stepId: id,
        position: c.pos,
        provider: options.provider,
        input: options.input ?? null,
        timeoutMs: options.timeout === undefined ? null : toMs(options.timeout),
        pollAfterMs: options.pollAfter === undefined ? null : toMs(options.pollAfter),
      });
      blocked++;
      return never<T>();
    },
  };

  let done: RunResult | null = null;
  Promise.resolve()
    .then(() => args.fn(args.input, step, args.ctx))
    .then(
      (output) => {
        done = { kind: "succeeded", output: output ?? null };
      },
      (err: unknown) => {
        done = outcomeOfThrow(err, args);
      },
    )
    .finally(poke);

  for (;;) {
    if (inFlight === 0 && stop) return stop;
    if (done) return done;
    if (inFlight === 0 && blocked > 0) {
      // Let every continuation that is only waiting on microtasks run before deciding.
      const before = epoch;
      await new Promise<void>((r) => setImmediate(r));
      if (epoch === before && !done && !stop && inFlight === 0) return { kind: "suspended", waits };
      continue;
    }
    await new Promise<void>((r) => {
      wake = r;
    });
  }
}

function fail(code: LonghaulError["code"], message: string): RunResult {
  return { kind: "failed", error: { code, message } };
}

function retryDelay(err: unknown, attempt: number, random?: () => number): number {
  if (err instanceof RetryAfterError) return err.retryAfterMs;
  return backoffMs(attempt, { baseMs: 1000, maxMs: 5 * 60_000, ...(random ? { random } : {}) });
}

function outcomeOfThrow(err: unknown, args: RunTaskArgs): RunResult {
  const info = toErrorInfo(err);
  // A step's own failure, rethrown by the task, is final: the step already used its attempts.
  if (err instanceof NonRetriableError || err instanceof StepError || err instanceof LonghaulError) {
    return { kind: "failed", error: info };
  }
  if (args.advanceAttempt >= args.maxAttempts) return { kind: "failed", error: info };
  return { kind: "retry", delayMs: retryDelay(err, args.advanceAttempt, args.random), error: info };
}
