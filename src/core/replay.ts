import { backoffMs } from "./backoff.ts";
import type { Duration } from "./duration.ts";
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
import type {
  ApprovalOptions,
  ApprovalResult,
  CallbackOptions,
  JobOptions,
  RunContext,
  StepApi,
  TaskContext,
  TaskFunction,
  WaitForEventOptions,
} from "./task-type.ts";
import type { WaitRequest } from "./wait.ts";

/** A step as stored: the memo that replay reads. */
export interface StoredStep {
  stepId: string;
  position: number;
  kind: StepKind;
  status: StepStatus;
  output: unknown;
  error: ErrorInfo | null;
  attempts: number;
  deadlineAt: number | null;
  /** For a callback: its URL has been handed to `handoff` successfully. */
  handedOff: boolean;
}

/** A `step.run` outcome to store before the task function may go on. */
export type RunOutcome =
  | { stepId: string; position: number; status: "succeeded"; output: unknown; attempts: number }
  | { stepId: string; position: number; status: "failed"; error: ErrorInfo; attempts: number }
  | { stepId: string; position: number; status: "running"; error: ErrorInfo; attempts: number };

export type RunResult =
  | { kind: "succeeded"; output: unknown }
  | { kind: "failed"; error: ErrorInfo }
  | { kind: "timed_out"; error: ErrorInfo }
  | { kind: "suspended" }
  | { kind: "retry"; delayMs: number; error: ErrorInfo };

/** What replay needs from outside: all I/O goes through these. */
export interface ReplayPorts {
  /** Stores a `step.run` outcome; awaited before the step resolves (ARCHITECTURE §3.2). */
  storeRunOutcome(outcome: RunOutcome): Promise<void>;
  /**
   * Stores a new wait before the function is abandoned, so whatever ends it can arrive at
   * any moment after (ARCHITECTURE §3.5). Returns the stored step, with its deadline and attempt.
   */
  registerWait(wait: WaitRequest): Promise<StoredStep>;
  /** The capability URL of a registered callback step (deterministic for the stored step). */
  callbackUrl(step: StoredStep): string;
  /** Records that a callback's URL reached its `handoff`. */
  markHandedOff(stepId: string): Promise<void>;
}

export interface RunTaskArgs {
  fn: TaskFunction;
  input: unknown;
  ctx: TaskContext;
  history: readonly StoredStep[];
  ports: ReplayPorts;
  maxAttempts: number;
  /** Attempt of the advance itself, for errors thrown outside any step. */
  advanceAttempt: number;
  /** Check that steps come in the stored order. Default true. */
  strictOrder?: boolean;
  /** Lifetime of a callback or approval without a timeout of its own. */
  defaultWaitMs?: number;
  random?: () => number;
}

/** Step failures that mean a deadline passed: uncaught, they end the task as `timed_out`. */
export const TIMEOUT_CODES: ReadonlySet<string> = new Set(["JOB_TIMED_OUT", "STEP_TIMED_OUT"]);

const never = <T>(): Promise<T> => new Promise<T>(() => {});

/**
 * Runs a task function once, with replay: steps found in `history` return their stored
 * outcome without running; new `step.run` code executes and is stored; a new wait is
 * registered through the ports and the function is abandoned at that point (it is re-run
 * from the top when the wait ends). With `strictOrder`, step calls must come in the same
 * order on every run; a step at a position that history gives to another id fails the task
 * with STEP_ORDER_MISMATCH.
 *
 * The function is suspended when nothing more can happen: no step is executing or being
 * registered, and it is blocked on at least one wait, after the microtask queue has drained.
 */
export async function runTask(args: RunTaskArgs): Promise<RunResult> {
  const strict = args.strictOrder ?? true;
  const defaultWaitMs = args.defaultWaitMs ?? 48 * 3_600_000;
  const byPosition = new Map<number, StoredStep>();
  const byId = new Map<string, StoredStep>();
  let nextNew = 0;
  for (const s of args.history) {
    byPosition.set(s.position, s);
    byId.set(s.stepId, s);
    nextNew = Math.max(nextNew, s.position + 1);
  }
  let position = 0;
  const seen = new Set<string>();
  let blocked = 0;
  let inFlight = 0;
  let epoch = 0;
  let stop: RunResult | null = null;
  let fatal: { error: unknown } | null = null;
  let wake: () => void = () => {};

  const poke = () => {
    epoch++;
    wake();
  };
  /** Counts a step the function now waits on; after an await the loop may be asleep, so wake it. */
  const block = () => {
    blocked++;
    poke();
  };
  const halt = (r: RunResult) => {
    stop ??= r;
    poke();
  };

  /** Claims a position for `id`, or stops the run if the order diverges from history. */
  const claim = (id: string, kind: StepKind): { pos: number; stored: StoredStep | undefined } | null => {
    if (stop || fatal) return null;
    if (typeof id !== "string" || id.length === 0 || id.length > 200) {
      halt(fail("VALIDATION_FAILED", "A step id must be a non-empty string of at most 200 characters."));
      return null;
    }
    if (seen.has(id)) {
      halt(
        fail("STEP_ID_DUPLICATE", `Step id "${id}" is used twice in one run; give every step a unique id.`),
      );
      return null;
    }
    seen.add(id);
    const stored = byId.get(id);
    if (!strict) {
      if (stored && stored.kind !== kind) {
        halt(mismatch(id, kind, stored.position, stored));
        return null;
      }
      poke();
      return { pos: stored ? stored.position : nextNew++, stored };
    }
    const pos = position++;
    const atPos = byPosition.get(pos);
    if ((atPos && (atPos.stepId !== id || atPos.kind !== kind)) || (stored && stored.position !== pos)) {
      halt(mismatch(id, kind, pos, atPos));
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

  /** Runs port I/O as in-flight work; a failure there (a lost lease) ends the run, not the task. */
  const io = async <T>(fn: () => Promise<T>): Promise<T | typeof FATAL> => {
    inFlight++;
    try {
      return await fn();
    } catch (error) {
      fatal ??= { error };
      return FATAL;
    } finally {
      inFlight--;
      poke();
    }
  };

  /** Registers a new wait (or replays a stored one) and blocks. */
  const wait = async <T>(id: string, kind: StepKind, request: (pos: number) => WaitRequest): Promise<T> => {
    const c = claim(id, kind);
    if (!c) return never<T>();
    if (c.stored) return replayOutcome<T>(id, c.stored);
    const stored = await io(() => args.ports.registerWait(request(c.pos)));
    if (stored === FATAL) return never<T>();
    block();
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
        if (!final) stop ??= { kind: "retry", delayMs: retryDelay(err, attempt, args.random), error: info };
      } finally {
        inFlight--;
      }
      if ((await io(() => args.ports.storeRunOutcome(outcome))) === FATAL) return never<Awaited<T>>();
      if (outcome.status === "succeeded") return outcome.output as Awaited<T>;
      if (outcome.status === "failed") throw new StepError(id, outcome.error);
      return never<Awaited<T>>();
    },

    job: <T>(id: string, options: JobOptions): Promise<T> => {
      if (!options || typeof options.provider !== "string" || options.provider === "") {
        halt(fail("VALIDATION_FAILED", `step.job("${id}") needs a provider name.`));
        return never<T>();
      }
      return wait<T>(id, "job", (position) => ({
        kind: "job",
        stepId: id,
        position,
        provider: options.provider,
        input: options.input ?? null,
        timeoutMs: optionalMs(options.timeout),
        pollAfterMs: optionalMs(options.pollAfter),
        cancelOnTimeout: options.cancelOnTimeout ?? true,
      }));
    },

    callback: async <T>(
      id: string,
      options: CallbackOptions = {},
      handoff?: (url: string) => unknown,
    ): Promise<T> => {
      const c = claim(id, "callback");
      if (!c) return never<T>();
      let stored = c.stored;
      if (stored && stored.status !== "waiting") return replayOutcome<T>(id, stored);
      if (!stored) {
        const registered = await io(() =>
          args.ports.registerWait({
            kind: "callback",
            stepId: id,
            position: c.pos,
            timeoutMs: optionalMs(options.timeout) ?? defaultWaitMs,
            verifySource: options.verify?.source ?? null,
          }),
        );
        if (registered === FATAL) return never<T>();
        stored = registered;
      }
      // The URL goes out only after its wait is stored; a crash before the handoff finished
      // hands the same URL out again on the next run.
      if (handoff && !stored.handedOff) {
        const url = args.ports.callbackUrl(stored);
        inFlight++;
        let failure: unknown = null;
        try {
          await handoff(url);
        } catch (err) {
          failure = err;
        } finally {
          inFlight--;
          poke();
        }
        if (failure !== null) {
          const attempt = args.advanceAttempt;
          halt(
            failure instanceof NonRetriableError || attempt >= args.maxAttempts
              ? { kind: "failed", error: toErrorInfo(failure) }
              : {
                  kind: "retry",
                  delayMs: retryDelay(failure, attempt, args.random),
                  error: toErrorInfo(failure),
                },
          );
          return never<T>();
        }
        if ((await io(() => args.ports.markHandedOff(id))) === FATAL) return never<T>();
      }
      block();
      return never<T>();
    },

    approval: (id: string, options: ApprovalOptions = {}): Promise<ApprovalResult> => {
      const approvers = options.approvers ?? [];
      const quorum = options.quorum ?? 1;
      if (!Number.isInteger(quorum) || quorum < 1 || (approvers.length > 0 && quorum > approvers.length)) {
        halt(
          fail("VALIDATION_FAILED", `step.approval("${id}"): quorum must be 1 to the number of approvers.`),
        );
        return never();
      }
      return wait<ApprovalResult>(id, "approval", (position) => ({
        kind: "approval",
        stepId: id,
        position,
        timeoutMs: optionalMs(options.timeout) ?? defaultWaitMs,
        approval: {
          approvers,
          quorum,
          onTimeout: options.onTimeout ?? null,
          title: options.title ?? null,
          description: options.description ?? null,
          remindAfterMs: optionalMs(options.remindAfter),
          escalateAfterMs: optionalMs(options.escalateAfter),
          escalateTo: options.escalateTo ?? [],
        },
      }));
    },

    sleep: (id: string, duration: Duration): Promise<void> =>
      wait<void>(id, "sleep", (position) => ({
        kind: "sleep",
        stepId: id,
        position,
        timeoutMs: toMs(duration),
      })),

    waitForEvent: <T>(
      id: string,
      options: WaitForEventOptions,
    ): Promise<{ name: string; data: T } | null> => {
      if (!options?.match || typeof options.match.event !== "string" || options.match.event === "") {
        halt(fail("VALIDATION_FAILED", `step.waitForEvent("${id}") needs match.event, the signal name.`));
        return never();
      }
      return wait(id, "wait_event", (position) => ({
        kind: "wait_event",
        stepId: id,
        position,
        timeoutMs: optionalMs(options.timeout),
        match: { event: options.match.event, data: options.match.data ?? {} },
      }));
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
    if (fatal) throw (fatal as { error: unknown }).error;
    if (inFlight === 0 && stop) return stop;
    if (done && inFlight === 0) return done;
    if (inFlight === 0 && blocked > 0) {
      // Let every continuation that is only waiting on microtasks run before deciding.
      const before = epoch;
      await new Promise<void>((r) => setImmediate(r));
      if (epoch === before && !done && !stop && !fatal && inFlight === 0) return { kind: "suspended" };
      continue;
    }
    await new Promise<void>((r) => {
      wake = r;
    });
  }
}

const FATAL = Symbol("fatal");

function optionalMs(d: Duration | undefined): number | null {
  return d === undefined ? null : toMs(d);
}

function mismatch(id: string, kind: StepKind, pos: number, atPos: StoredStep | undefined): RunResult {
  const was = atPos ? `"${atPos.stepId}" (${atPos.kind})` : "nothing";
  return fail(
    "STEP_ORDER_MISMATCH",
    `Step ${pos} is "${id}" (${kind}) but the stored history has ${was} there. Task code must call its steps in the same order on every run; start a new task for changed code.`,
  );
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
  if (err instanceof StepError && TIMEOUT_CODES.has(err.code)) return { kind: "timed_out", error: info };
  if (err instanceof NonRetriableError || err instanceof StepError || err instanceof LonghaulError) {
    return { kind: "failed", error: info };
  }
  if (args.advanceAttempt >= args.maxAttempts) return { kind: "failed", error: info };
  return { kind: "retry", delayMs: retryDelay(err, args.advanceAttempt, args.random), error: info };
}
