import type { RunResult, RunTaskArgs } from "./replay-contract.ts";
import { ReplayRun } from "./replay-run.ts";
import { stepApi } from "./step-api.ts";
import type { TaskContext } from "./task-type.ts";

export type {
  AdvanceResult,
  ReplayPorts,
  RunOutcome,
  RunResult,
  RunTaskArgs,
} from "./replay-contract.ts";
export { DEFAULT_TIMEOUT_MS } from "./replay-run.ts";
export type { StoredStep } from "./step.ts";

/**
 * Runs a task function once, with replay: steps found in `history` return their stored
 * outcome without running; new `step.run` code executes and is stored; a new wait is
 * registered through the ports and the function is abandoned at that point (it is re-run
 * from the top when the wait ends). With `strictOrder`, step calls must come in the same
 * order on every run; a step at a position that history gives to another id fails the task
 * with STEP_ORDER_MISMATCH.
 *
 * The function is suspended when nothing more can happen: no step is executing or being
 * registered, and it is blocked on at least one wait, after the microtask queue has drained
 * (`ReplayRun.settle`). Each kind of step is one function of `step-api.ts`.
 */
export async function runTask(args: RunTaskArgs): Promise<RunResult> {
  const run = new ReplayRun(args);
  const step = stepApi(run);
  const ctx: TaskContext = {
    ...args.ctx,
    log: run.logger(),
    signal: args.signal ?? new AbortController().signal,
  };
  run.start(() => args.fn(args.input, step, ctx));
  return run.settle();
}
