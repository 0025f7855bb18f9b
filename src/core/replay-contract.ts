import type { ArtifactInfo } from "./artifact.ts";
import type { Clock } from "./clock.ts";
import type { ErrorInfo } from "./errors.ts";
import type { NotifyContext } from "./notification.ts";
import type { ReportSpec } from "./report.ts";
import type { StoredStep } from "./step.ts";
import type { LogLine } from "./task-log.ts";
import type { ArtifactData, TaskContext, TaskFunction } from "./task-type.ts";
import type { WaitRequest } from "./wait.ts";

// What replay (./replay.ts) takes and gives: the types its parts (./replay-run.ts,
// ./step-api.ts) share, apart from the code that runs them.

/** A `step.run` outcome to store before the task function may go on. */
export type RunOutcome =
  | { stepId: string; position: number; status: "succeeded"; output: unknown; attempts: number }
  | { stepId: string; position: number; status: "failed"; error: ErrorInfo; attempts: number }
  | { stepId: string; position: number; status: "running"; error: ErrorInfo; attempts: number };

/** Bytes `writeArtifact` put in the blob store, not yet named by any row. */
export interface WrittenArtifact {
  blobKey: string;
  size: number;
  sha256: string;
}

/** A written artifact and the step that stores it. */
export interface ArtifactToStore extends WrittenArtifact {
  stepId: string;
  position: number;
  attempts: number;
  name: string;
  contentType: string;
}

/** How a run ended, other than by a retry: the task's result, or its suspension on a wait. */
export type RunEnd =
  | { kind: "succeeded"; output: unknown }
  | { kind: "failed"; error: ErrorInfo }
  | { kind: "timed_out"; error: ErrorInfo }
  | { kind: "suspended" };

/** What one run of a task function comes to; a retry waits `delayMs`. */
export type RunResult = RunEnd | { kind: "retry"; delayMs: number; error: ErrorInfo };

/**
 * What an advance records: its run's result, a retry put at a time on the engine's clock, and
 * the new lines of the task's `log`, stored as `task.log` events in the same transaction.
 */
export type AdvanceResult = (RunEnd | { kind: "retry"; runAt: number; error: ErrorInfo }) & {
  logs?: readonly LogLine[];
};

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
  /**
   * `step.artifact`'s bytes: streams `data` into the blob store under a key of its own and
   * answers what was written. A failure here is the task code's (its stream broke) and is
   * retried like a `step.run`'s. Without this port `step.artifact` fails the task.
   */
  writeArtifact?(data: ArtifactData): Promise<WrittenArtifact>;
  /**
   * Records a written artifact and its step's outcome in one transaction (ARCHITECTURE §3.8),
   * answering the stored artifact: the task's artifact of that name if one was already stored,
   * whose bytes are kept while the new ones are removed. Awaited before the step resolves.
   * `refused`: the artifact would pass the tenant's storage quota; its step was stored failed
   * with that error, and the bytes were removed.
   */
  storeArtifact?(a: ArtifactToStore): Promise<ArtifactInfo | { refused: ErrorInfo }>;
  /**
   * `step.report`'s bytes: the report rendered as a PDF. Called only when the report's artifact
   * is not stored yet, as its data is read. Without this port `step.report` fails the task.
   */
  renderReport?(report: ReportSpec): Promise<Uint8Array>;
  /** Records that a callback's URL reached its `handoff`. */
  markHandedOff(stepId: string): Promise<void>;
  /**
   * Takes each new line of the task's `log` (not one a replay reaches again), already cut to
   * size; the engine stores them with the advance's outcome. Without it lines are dropped.
   */
  log?(line: LogLine): void;
}

export interface RunTaskArgs {
  fn: TaskFunction;
  input: unknown;
  ctx: TaskContext;
  /** Aborts when the task is canceled while the function runs; given to it as `signal`. */
  signal?: AbortSignal;
  history: readonly StoredStep[];
  ports: ReplayPorts;
  maxAttempts: number;
  /** Attempt of the advance itself, for errors thrown outside any step. */
  advanceAttempt: number;
  /** Check that steps come in the stored order. Default true. */
  strictOrder?: boolean;
  /** Lifetime of a callback or approval without a timeout of its own. */
  defaultWaitMs?: number;
  /** The deployment's notifiers, against which an approval's `notify` is checked. Absent: none. */
  notify?: NotifyContext;
  /**
   * Deadline of a `step.job` or `step.waitForEvent` without a timeout of its own, so every
   * wait ends by a durable timer even when its job or event never comes. Default 7 days.
   */
  defaultTimeoutMs?: number;
  random?: () => number;
  /** The engine's clock: a `RetryAfterError` given a time waits until then on it. Default the system clock. */
  clock?: Clock;
}
