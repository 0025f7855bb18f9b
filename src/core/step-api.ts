import { type ArtifactInfo, artifactNameProblem, artifactStepId } from "./artifact.ts";
import { batchStep } from "./batch-step.ts";
import type { Duration } from "./duration.ts";
import { toMs } from "./duration.ts";
import { NonRetriableError, StepError, toErrorInfo } from "./errors.ts";
import { checkContentType } from "./file.ts";
import { emailToProblem, type NotifyContext, notifyProblem, storedEntry } from "./notification.ts";
import { declaredMaxTokens } from "./quota.ts";
import type { RunOutcome } from "./replay-contract.ts";
import { FATAL, fail, INVALID, never, type ReplayRun } from "./replay-run.ts";
import { type ReportOptions, type ReportSpec, reportArtifactName, reportProblem } from "./report.ts";
import type {
  ApprovalOptions,
  ApprovalResult,
  ArtifactData,
  ArtifactOptions,
  BatchOptions,
  CallbackOptions,
  JobOptions,
  RunContext,
  StepApi,
  WaitForEventOptions,
} from "./task-type.ts";
import { approvalProblem, isOnTimeout, ON_TIMEOUT_HINT } from "./wait.ts";

/**
 * The `step` object task code is given for one run: one function per kind of step, each
 * reporting to the run. `step.run` executes and stores; every other kind stores a wait
 * (or replays a stored one) and blocks.
 */
export function stepApi(run: ReplayRun): StepApi {
  const api: StepApi = {
    run: <T>(id: string, fn: (c: RunContext) => T | Promise<T>) => runStep<T>(run, id, fn),
    job: <T>(id: string, options: JobOptions) => jobStep<T>(run, id, options),
    callback: <T>(id: string, options?: CallbackOptions, handoff?: (url: string) => unknown) =>
      callbackStep<T>(run, id, options, handoff),
    approval: (id: string, options?: ApprovalOptions) => approvalStep(run, id, options),
    sleep: (id: string, duration: Duration) => sleepStep(run, id, duration),
    artifact: (name: string, data: ArtifactData, options?: ArtifactOptions) =>
      artifactStep(run, name, data, options),
    report: (id: string, report: ReportSpec, options?: ReportOptions) => reportStep(run, id, report, options),
    waitForEvent: <T>(id: string, options: WaitForEventOptions) => waitForEventStep<T>(run, id, options),
    batch: <T>(id: string, options: BatchOptions) => batchStep<T>(run, api, id, options),
  };
  return api;
}

/**
 * `step.run`: a stored outcome replays; otherwise the code runs, its outcome is stored
 * before the function goes on (ARCHITECTURE §3.2), and a failure that may be retried ends
 * the run with a retry after backoff.
 */
async function runStep<T>(
  run: ReplayRun,
  id: string,
  fn: (c: RunContext) => T | Promise<T>,
): Promise<Awaited<T>> {
  const c = run.claim(id, "run");
  if (!c) return never<Awaited<T>>();
  const { pos, stored } = c;
  if (stored && stored.status !== "running") return run.replayOutcome<Awaited<T>>(id, stored);
  const attempt = (stored?.attempts ?? 0) + 1;
  run.enter();
  let outcome: RunOutcome;
  try {
    const output = await fn({ idempotencyKey: `${run.args.ctx.taskId}:${id}`, attempt });
    outcome = {
      stepId: id,
      position: pos,
      status: "succeeded",
      output: output ?? null,
      attempts: attempt,
    };
  } catch (err) {
    const info = toErrorInfo(err);
    const final = err instanceof NonRetriableError || attempt >= run.args.maxAttempts;
    outcome = final
      ? { stepId: id, position: pos, status: "failed", error: info, attempts: attempt }
      : { stepId: id, position: pos, status: "running", error: info, attempts: attempt };
    if (!final) run.stopWith({ kind: "retry", delayMs: run.retryDelay(err, attempt), error: info });
  } finally {
    run.leave();
  }
  if ((await run.io(() => run.args.ports.storeRunOutcome(outcome))) === FATAL) return never<Awaited<T>>();
  if (outcome.status === "succeeded") return outcome.output as Awaited<T>;
  if (outcome.status === "failed") throw new StepError(id, outcome.error);
  return never<Awaited<T>>();
}

/** `step.job`: a wait on an external job, dispatched once the wait is stored. */
function jobStep<T>(run: ReplayRun, id: string, options: JobOptions): Promise<T> {
  if (!options || typeof options.provider !== "string" || options.provider === "") {
    run.halt(fail("VALIDATION_FAILED", `step.job("${id}") needs a provider name.`));
    return never<T>();
  }
  const max = options.maxTokens;
  if (max !== undefined && (typeof max !== "number" || !Number.isInteger(max) || max <= 0)) {
    run.halt(fail("VALIDATION_FAILED", `step.job("${id}"): maxTokens must be a whole number > 0.`));
    return never<T>();
  }
  return run.wait<T>(id, "job", (position) => ({
    kind: "job",
    stepId: id,
    position,
    provider: options.provider,
    input: options.input ?? null,
    timeoutMs: optionalMs(options.timeout) ?? run.defaultTimeoutMs,
    pollAfterMs: optionalMs(options.pollAfter),
    cancelOnTimeout: options.cancelOnTimeout ?? true,
    maxTokens: declaredMaxTokens(max, options.input),
  }));
}

/**
 * `step.callback`: a wait ended by a call to its URL. The URL goes out only after its wait
 * is stored; a crash before the handoff finished hands the same URL out again on the next run.
 */
async function callbackStep<T>(
  run: ReplayRun,
  id: string,
  options: CallbackOptions = {},
  handoff?: (url: string) => unknown,
): Promise<T> {
  const c = run.claim(id, "callback");
  if (!c) return never<T>();
  let stored = c.stored;
  if (stored && stored.status !== "waiting") return run.replayOutcome<T>(id, stored);
  if (!stored) {
    const timeoutMs = run.build(id, "callback", () => optionalMs(options.timeout) ?? run.defaultWaitMs);
    if (timeoutMs === INVALID) return never<T>();
    const registered = await run.io(() =>
      run.args.ports.registerWait({
        kind: "callback",
        stepId: id,
        position: c.pos,
        timeoutMs,
        verifySource: options.verify?.source ?? null,
      }),
    );
    if (registered === FATAL) return never<T>();
    stored = registered;
  }
  if (handoff && !stored.handedOff) {
    const url = run.args.ports.callbackUrl(stored);
    run.enter();
    let failure: unknown = null;
    try {
      await handoff(url);
    } catch (err) {
      failure = err;
    } finally {
      run.leave();
      run.poke();
    }
    if (failure !== null) {
      run.halt(run.failOrRetry(failure, run.args.advanceAttempt));
      return never<T>();
    }
    if ((await run.io(() => run.args.ports.markHandedOff(id))) === FATAL) return never<T>();
  }
  run.block();
  return never<T>();
}

/** `step.approval`: a wait ended by people's decisions through its links. */
function approvalStep(run: ReplayRun, id: string, options: ApprovalOptions = {}): Promise<ApprovalResult> {
  const approvers = options.approvers ?? [];
  const quorum = options.quorum ?? 1;
  const show = options.show ?? [];
  const escalate = options.escalate;
  const problem =
    approvalProblem(approvers, quorum, show) ??
    notifyProblem(options.notify, "notify", run.args.notify ?? EMPTY_NOTIFY) ??
    emailToProblem(options.notify, "notify", approvers) ??
    escalateProblem(options, run.args.notify ?? EMPTY_NOTIFY);
  if (problem !== null) {
    run.halt(fail("VALIDATION_FAILED", `step.approval("${id}"): ${problem}.`));
    return never();
  }
  const timeoutMs = optionalMs(options.timeout) ?? run.defaultWaitMs;
  const notifiers = (run.args.notify ?? EMPTY_NOTIFY).notifiers;
  return run.wait<ApprovalResult>(id, "approval", (position) => ({
    kind: "approval",
    stepId: id,
    position,
    timeoutMs,
    approval: {
      approvers,
      quorum,
      onTimeout: options.onTimeout ?? null,
      title: options.title ?? null,
      description: options.description ?? null,
      show,
      remindAfterMs: optionalMs(options.remindAfter),
      escalateAfterMs: optionalMs(escalate?.after ?? options.escalateAfter),
      escalateTo: escalate?.to ?? options.escalateTo ?? [],
      allowShared: options.allowShared === true,
      allowSelfApproval: options.allowSelfApproval === true,
      ...(options.notify?.length ? { notify: options.notify.map((e) => storedEntry(e, notifiers)) } : {}),
      ...(escalate?.notify ? { escalateNotify: escalate.notify.map((e) => storedEntry(e, notifiers)) } : {}),
      timeoutMs,
    },
  }));
}

const EMPTY_NOTIFY: NotifyContext = { notifiers: {}, webhookSecret: false };

/** What is wrong with an approval's escalation and timeout policy, or null. */
function escalateProblem(o: ApprovalOptions, ctx: NotifyContext): string | null {
  const e = o.escalate;
  if (e !== undefined) {
    if (
      typeof e !== "object" ||
      e === null ||
      !Array.isArray(e.to) ||
      !e.to.every((a) => typeof a === "string" && a)
    ) {
      return "escalate.to must be a list of non-empty approver names";
    }
    const p = notifyProblem(e.notify, "escalate.notify", ctx);
    if (p !== null) return p;
  }
  if (o.onTimeout !== undefined && !isOnTimeout(o.onTimeout)) {
    return `onTimeout is ${JSON.stringify(o.onTimeout)}; it must be ${ON_TIMEOUT_HINT}`;
  }
  if (o.onTimeout === "escalate" && e === undefined && (o.escalateTo ?? []).length === 0) {
    return 'onTimeout is "escalate" but there is nobody to escalate to; set escalate.to';
  }
  return null;
}

/**
 * `step.report`: a `step.artifact` of the rendered PDF, under the same step id, row and replay.
 * The PDF is rendered only as the artifact's data is read, so a replay, which answers the stored
 * artifact, renders nothing, and a render that throws is retried as a broken stream would be.
 */
function reportStep(
  run: ReplayRun,
  id: string,
  report: ReportSpec,
  options: ReportOptions = {},
): Promise<ArtifactInfo> {
  if (typeof id !== "string" || id.length === 0) {
    run.halt(fail("VALIDATION_FAILED", "step.report: the id must be a non-empty string."));
    return never();
  }
  const problem = reportProblem(report);
  if (problem !== null) {
    run.halt(fail("VALIDATION_FAILED", `step.report("${id}"): ${problem}.`));
    return never();
  }
  const render = run.args.ports.renderReport;
  if (!render) {
    run.halt(fail("VALIDATION_FAILED", `step.report("${id}"): this engine has no report renderer.`));
    return never();
  }
  const data: AsyncIterable<Uint8Array> = {
    async *[Symbol.asyncIterator]() {
      yield await render(report);
    },
  };
  return artifactStep(run, reportArtifactName(id, options), data, { contentType: "application/pdf" });
}

/**
 * `step.artifact`: a stored artifact replays; otherwise its bytes are written to the blob
 * store (a failure there is retried like a `step.run`'s), then its row and the step's outcome
 * are stored in one transaction before the function goes on (ARCHITECTURE §3.8).
 */
async function artifactStep(
  run: ReplayRun,
  name: string,
  data: ArtifactData,
  options: ArtifactOptions = {},
): Promise<ArtifactInfo> {
  const problem = artifactNameProblem(name);
  if (problem !== null) {
    run.halt(fail("VALIDATION_FAILED", `step.artifact: ${problem}.`));
    return never();
  }
  const id = artifactStepId(name);
  const c = run.claim(id, "run", {
    twice: `step.artifact("${name}") is called twice in one run; give every artifact of a task its own name.`,
  });
  if (!c) return never();
  if (c.stored && c.stored.status !== "running") return run.replayOutcome<ArtifactInfo>(id, c.stored);
  let contentType: string;
  try {
    contentType =
      options.contentType === undefined && typeof data === "string"
        ? "text/plain; charset=utf-8"
        : checkContentType(options.contentType);
  } catch (err) {
    run.halt(fail("VALIDATION_FAILED", `step.artifact("${name}"): ${(err as Error).message}`));
    return never();
  }
  const { writeArtifact, storeArtifact } = run.args.ports;
  if (!writeArtifact || !storeArtifact) {
    run.halt(
      fail("VALIDATION_FAILED", `step.artifact("${name}"): this engine has no blob store for artifacts.`),
    );
    return never();
  }
  const attempt = (c.stored?.attempts ?? 0) + 1;
  run.enter();
  let written: Awaited<ReturnType<typeof writeArtifact>> | null = null;
  let failure: RunOutcome | null = null;
  try {
    written = await writeArtifact(data);
  } catch (err) {
    // The task's bytes could not be read: retried, and failed at the last attempt, as step.run.
    const info = toErrorInfo(err);
    const final = err instanceof NonRetriableError || attempt >= run.args.maxAttempts;
    failure = {
      stepId: id,
      position: c.pos,
      status: final ? "failed" : "running",
      error: info,
      attempts: attempt,
    };
    if (!final) run.stopWith({ kind: "retry", delayMs: run.retryDelay(err, attempt), error: info });
  } finally {
    run.leave();
  }
  if (failure || !written) {
    if (!failure || (await run.io(() => run.args.ports.storeRunOutcome(failure))) === FATAL) return never();
    if (failure.status === "failed") throw new StepError(id, failure.error);
    return never();
  }
  const bytes = written;
  const stored = await run.io(() =>
    storeArtifact({ ...bytes, stepId: id, position: c.pos, attempts: attempt, name, contentType }),
  );
  if (stored === FATAL) return never();
  if ("refused" in stored) throw new StepError(id, stored.refused);
  return stored;
}

/** `step.sleep`: a wait ended by its own deadline. */
function sleepStep(run: ReplayRun, id: string, duration: Duration): Promise<void> {
  return run.wait<void>(id, "sleep", (position) => ({
    kind: "sleep",
    stepId: id,
    position,
    timeoutMs: toMs(duration),
  }));
}

/** `step.waitForEvent`: a wait ended by a matching signal, or `null` at its deadline. */
function waitForEventStep<T>(
  run: ReplayRun,
  id: string,
  options: WaitForEventOptions,
): Promise<{ name: string; data: T } | null> {
  if (!options?.match || typeof options.match.event !== "string" || options.match.event === "") {
    run.halt(fail("VALIDATION_FAILED", `step.waitForEvent("${id}") needs match.event, the signal name.`));
    return never();
  }
  return run.wait(id, "wait_event", (position) => ({
    kind: "wait_event",
    stepId: id,
    position,
    timeoutMs: optionalMs(options.timeout) ?? run.defaultTimeoutMs,
    match: { event: options.match.event, data: options.match.data ?? {} },
  }));
}

function optionalMs(d: Duration | undefined): number | null {
  return d === undefined ? null : toMs(d);
}
