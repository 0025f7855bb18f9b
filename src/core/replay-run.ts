import { backoffMs } from "./backoff.ts";
import { type Clock, systemClock } from "./clock.ts";
import {
  type ErrorCode,
  LonghaulError,
  NonRetriableError,
  RetryAfterError,
  StepError,
  toErrorInfo,
} from "./errors.ts";
import type { RunResult, RunTaskArgs } from "./replay-contract.ts";
import type { StepKind, StoredStep } from "./step.ts";
import { type LogLevel, logLine, MAX_LOG_LINES_PER_ADVANCE, type TaskLog } from "./task-log.ts";
import type { WaitRequest } from "./wait.ts";

/** The deadline of a job or event wait that sets none: 7 days. */
export const DEFAULT_TIMEOUT_MS = 7 * 24 * 3_600_000;
/** The lifetime of a callback or approval that sets none: 48 hours. */
const DEFAULT_WAIT_MS = 48 * 3_600_000;

/** Step failures that mean a deadline passed: uncaught, they end the task as `timed_out`. */
export const TIMEOUT_CODES: ReadonlySet<string> = new Set<ErrorCode>(["JOB_TIMED_OUT", "STEP_TIMED_OUT"]);

/** Returned by port I/O that failed: the run ends with that failure, the task does not. */
export const FATAL = Symbol("fatal");
/** Returned by `build` for options the task code got wrong: the run has already halted. */
export const INVALID = Symbol("invalid");

/** A promise that never settles: a step the function will not get past in this run. */
export const never = <T>(): Promise<T> => new Promise<T>(() => {});

/** The `step` method that makes each kind of step, as task code calls it. */
const stepMethod: Record<StepKind, string> = {
  run: "run",
  job: "job",
  callback: "callback",
  approval: "approval",
  sleep: "sleep",
  wait_event: "waitForEvent",
};

/**
 * One run of a task function: where each step call lands in the stored history, what is
 * still in flight, and when the run is over. The step methods (`step-api.ts`) report to it;
 * `settle` watches the counters and answers the run's result.
 *
 * The run is suspended when nothing more can happen: no step is executing or being
 * registered, and the function is blocked on at least one wait, after the microtask queue
 * has drained. Every change of state `poke`s, so `settle` re-checks after each.
 */
export class ReplayRun {
  readonly args: RunTaskArgs;
  readonly clock: Clock;
  readonly defaultWaitMs: number;
  readonly defaultTimeoutMs: number;
  private readonly strict: boolean;
  private readonly byPosition = new Map<number, StoredStep>();
  private readonly byId = new Map<string, StoredStep>();
  private readonly seen = new Set<string>();
  /** The position of the next step not in history, when steps may come in any order. */
  private nextNew = 0;
  /** The position of the next step call, when steps must come in the stored order. */
  private position = 0;
  /** Step calls made so far in this run: where a log line stands against the stored history. */
  private calls = 0;
  /** New log lines this run, and those over the cap it dropped. */
  private lines = 0;
  private dropped = 0;
  /** Steps the function is blocked on. */
  private blocked = 0;
  /** Step code and port I/O running now. */
  private inFlight = 0;
  /** Counts state changes, so `settle` can tell whether a drained microtask queue changed anything. */
  private epoch = 0;
  private stop: RunResult | null = null;
  private fatal: { error: unknown } | null = null;
  private done: RunResult | null = null;
  private wake: () => void = () => {};

  constructor(args: RunTaskArgs) {
    this.args = args;
    this.clock = args.clock ?? systemClock;
    this.strict = args.strictOrder ?? true;
    this.defaultWaitMs = args.defaultWaitMs ?? DEFAULT_WAIT_MS;
    this.defaultTimeoutMs = args.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    for (const s of args.history) {
      this.byPosition.set(s.position, s);
      this.byId.set(s.stepId, s);
      this.nextNew = Math.max(this.nextNew, s.position + 1);
    }
  }

  /** Something changed: wake `settle` if it sleeps. */
  poke(): void {
    this.epoch++;
    this.wake();
  }

  /** Counts a step the function now waits on; after an await the loop may be asleep, so wake it. */
  block(): void {
    this.blocked++;
    this.poke();
  }

  /** Ends the run with `r` once nothing is in flight; the first reason wins. */
  halt(r: RunResult): void {
    this.stop ??= r;
    this.poke();
  }

  /** Ends the run with `r` when the step code that decided it is done, without waking `settle`. */
  stopWith(r: RunResult): void {
    this.stop ??= r;
  }

  /** Counts step code running outside port I/O (a `step.run` body, a handoff). */
  enter(): void {
    this.inFlight++;
  }

  leave(): void {
    this.inFlight--;
  }

  /**
   * Claims a position for `id`, or stops the run if the order diverges from history. A step
   * whose id longhaul derives (`step.artifact`'s) was checked already, and says what is twice.
   */
  claim(
    id: string,
    kind: StepKind,
    derived?: { twice: string },
  ): { pos: number; stored: StoredStep | undefined } | null {
    if (this.stop || this.fatal) return null;
    if (!derived && (typeof id !== "string" || id.length === 0 || id.length > 200)) {
      this.halt(fail("VALIDATION_FAILED", "A step id must be a non-empty string of at most 200 characters."));
      return null;
    }
    if (this.seen.has(id)) {
      this.halt(
        fail(
          "STEP_ID_DUPLICATE",
          derived?.twice ?? `Step id "${id}" is used twice in one run; give every step a unique id.`,
        ),
      );
      return null;
    }
    this.seen.add(id);
    this.calls++;
    const stored = this.byId.get(id);
    if (!this.strict) {
      if (stored && stored.kind !== kind) {
        this.halt(mismatch(id, kind, stored.position, stored));
        return null;
      }
      this.poke();
      return { pos: stored ? stored.position : this.nextNew++, stored };
    }
    const pos = this.position++;
    const atPos = this.byPosition.get(pos);
    if ((atPos && (atPos.stepId !== id || atPos.kind !== kind)) || (stored && stored.position !== pos)) {
      this.halt(mismatch(id, kind, pos, atPos));
      return null;
    }
    this.poke();
    return { pos, stored };
  }

  /** A stored step's outcome: its output, its error, or a wait that has not ended. */
  replayOutcome<T>(id: string, stored: StoredStep): Promise<T> {
    if (stored.status === "succeeded") return Promise.resolve(stored.output as T);
    if (stored.status === "failed" || stored.status === "timed_out" || stored.status === "canceled") {
      return Promise.reject(
        new StepError(id, stored.error ?? { code: "STEP_FAILED", message: "step failed" }),
      );
    }
    this.blocked++;
    return never<T>();
  }

  /**
   * The task's `log`. A line is numbered by the step calls made before it: while fewer calls
   * have been made than the history holds steps, the run is replaying what an earlier run
   * already did, so its lines were written then and are skipped (ARCHITECTURE §4.4). Lines
   * after the last stored step are new: they are cut to size, capped per run, and handed to
   * the `log` port.
   */
  logger(): TaskLog {
    const write = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) =>
      this.writeLine(level, message, fields);
    return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
  }

  private writeLine(level: LogLevel, message: unknown, fields: unknown): void {
    const port = this.args.ports.log;
    if (!port || this.calls < this.args.history.length) return;
    if (this.lines >= MAX_LOG_LINES_PER_ADVANCE) {
      if (this.dropped++ === 0) {
        port(
          logLine(
            "warn",
            `More than ${MAX_LOG_LINES_PER_ADVANCE} log lines in one run; the rest of this run's lines are dropped.`,
            undefined,
            this.calls,
          ),
        );
      }
      return;
    }
    this.lines++;
    port(logLine(level, message, fields, this.calls));
  }

  /** Runs port I/O as in-flight work; a failure there (a lost lease) ends the run, not the task. */
  async io<T>(fn: () => Promise<T>): Promise<T | typeof FATAL> {
    this.inFlight++;
    try {
      return await fn();
    } catch (error) {
      this.fatal ??= { error };
      return FATAL;
    } finally {
      this.inFlight--;
      this.poke();
    }
  }

  /**
   * Builds a new wait's request. Bad options (an unparsable or over-long duration) are the
   * task code's mistake and will be the same on every retry, so they fail the task at once,
   * naming the step, instead of failing the registration and retrying forever.
   */
  build<R>(id: string, kind: StepKind, make: () => R): R | typeof INVALID {
    try {
      return make();
    } catch (err) {
      if (!(err instanceof LonghaulError)) throw err;
      this.halt(fail(err.code, `step.${stepMethod[kind]}("${id}"): ${err.message}`));
      return INVALID;
    }
  }

  /** Registers a new wait (or replays a stored one) and blocks. */
  async wait<T>(id: string, kind: StepKind, request: (pos: number) => WaitRequest): Promise<T> {
    const c = this.claim(id, kind);
    if (!c) return never<T>();
    if (c.stored) return this.replayOutcome<T>(id, c.stored);
    const built = this.build(id, kind, () => request(c.pos));
    if (built === INVALID) return never<T>();
    const stored = await this.io(() => this.args.ports.registerWait(built));
    if (stored === FATAL) return never<T>();
    this.block();
    return never<T>();
  }

  /** How long to wait before retrying after `err`: its own `RetryAfterError` time, or backoff. */
  retryDelay(err: unknown, attempt: number): number {
    if (err instanceof RetryAfterError) return err.delayMs(this.clock.now());
    const random = this.args.random;
    return backoffMs(attempt, { baseMs: 1000, maxMs: 5 * 60_000, ...(random ? { random } : {}) });
  }

  /** A failure of step code, or of a handoff, that may be retried: retry it, or fail when it may not. */
  failOrRetry(err: unknown, attempt: number): RunResult {
    return err instanceof NonRetriableError || attempt >= this.args.maxAttempts
      ? { kind: "failed", error: toErrorInfo(err) }
      : { kind: "retry", delayMs: this.retryDelay(err, attempt), error: toErrorInfo(err) };
  }

  /** Runs the task function; its return or throw is the run's result unless a step ended it first. */
  start(run: () => Promise<unknown>): void {
    Promise.resolve()
      .then(run)
      .then(
        (output) => {
          this.done = { kind: "succeeded", output: output ?? null };
        },
        (err: unknown) => {
          this.done = this.outcomeOfThrow(err);
        },
      )
      .finally(() => this.poke());
  }

  /** Waits until the run is over: stopped, returned or thrown, or suspended on its waits. */
  async settle(): Promise<RunResult> {
    for (;;) {
      if (this.fatal) throw this.fatal.error;
      if (this.inFlight === 0 && this.stop) return this.stop;
      if (this.done && this.inFlight === 0) return this.done;
      if (this.inFlight === 0 && this.blocked > 0) {
        // Let every continuation that is only waiting on microtasks run before deciding.
        const before = this.epoch;
        await new Promise<void>((r) => setImmediate(r));
        if (this.isQuietSince(before)) return { kind: "suspended" };
        continue;
      }
      await new Promise<void>((r) => {
        this.wake = r;
      });
    }
  }

  private isQuietSince(epoch: number): boolean {
    return this.epoch === epoch && !this.done && !this.stop && !this.fatal && this.inFlight === 0;
  }

  private outcomeOfThrow(err: unknown): RunResult {
    const info = toErrorInfo(err);
    // A step's own failure, rethrown by the task, is final: the step already used its attempts.
    if (err instanceof StepError && TIMEOUT_CODES.has(err.code)) return { kind: "timed_out", error: info };
    if (err instanceof NonRetriableError || err instanceof StepError || err instanceof LonghaulError) {
      return { kind: "failed", error: info };
    }
    if (this.args.advanceAttempt >= this.args.maxAttempts) return { kind: "failed", error: info };
    return { kind: "retry", delayMs: this.retryDelay(err, this.args.advanceAttempt), error: info };
  }
}

export function fail(code: ErrorCode, message: string): RunResult {
  return { kind: "failed", error: { code, message } };
}

function mismatch(id: string, kind: StepKind, pos: number, atPos: StoredStep | undefined): RunResult {
  const was = atPos ? `"${atPos.stepId}" (${atPos.kind})` : "nothing";
  return fail(
    "STEP_ORDER_MISMATCH",
    `Step ${pos} is "${id}" (${kind}) but the stored history has ${was} there. Task code must call its steps in the same order on every run; start a new task for changed code.`,
  );
}
