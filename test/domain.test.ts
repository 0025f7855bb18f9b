import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  attemptState,
  canMoveDelivery,
  checkReplayable,
  type DeliveryAttemptResult,
  type DeliveryState,
  deliveryMoves,
} from "../src/core/delivery.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { ulidGenerator } from "../src/core/ids.ts";
import {
  atProviderJobStatuses,
  canMoveJob,
  isTerminalJob,
  type JobEventType,
  type JobStatus,
  jobEventEffect,
  jobEventTypes,
  jobMove,
  jobMoves,
  jobStatuses,
  liveJobStatuses,
  newJobStatus,
  nextJobStatus,
  slotHolders,
  statusOnCreated,
} from "../src/core/job.ts";
import {
  admissionLocks,
  admitJob,
  countsSlots,
  type Quotas,
  type TenantRow,
  taskStart,
} from "../src/core/quota.ts";
import {
  canMoveStep,
  runOutcomes,
  type StepKind,
  type StepRow,
  stepGuard,
  stepKinds,
  stepMoves,
  stepStatuses,
  waitEnds,
} from "../src/core/step.ts";
import {
  cancelCascade,
  cancelPlan,
  canMoveTask,
  isTerminalTask,
  taskMoves,
  taskStatuses,
} from "../src/core/task.ts";
import { type ApprovalConfig, timeoutEnd } from "../src/core/wait.ts";
import {
  afterFailure,
  canMoveWorkItem,
  typedWorkItem,
  type WorkItem,
  type WorkItemStatus,
  workItemMove,
  workItemMoves,
} from "../src/core/work-item.ts";

// The transition tables of the domain (ARCHITECTURE §3.3): each states which state may move
// to which, the terminal states are those with no moves, and the rules that decide a move
// only ever decide one the table allows.

type Table<S extends string> = Readonly<Record<S, readonly S[]>>;

/** What every table must be: total over its states, no move to itself, terminal states stuck. */
function checkShape<S extends string>(
  table: Table<S>,
  states: readonly S[],
  terminal: readonly S[],
  canMove: (from: S, to: S) => boolean,
): void {
  assert.deepEqual(Object.keys(table).sort(), [...states].sort(), "one row per state");
  for (const from of states) {
    for (const to of table[from]) assert.ok(states.includes(to), `${from} → ${to}: a known state`);
    assert.equal(canMove(from, from), false, `${from} → ${from} is not a move`);
  }
  assert.deepEqual(
    states.filter((s) => table[s].length === 0),
    [...terminal],
    "the terminal states are the ones with no moves",
  );
  for (const from of terminal) {
    for (const to of states) assert.equal(canMove(from, to), false, `terminal ${from} never moves to ${to}`);
  }
}

describe("task", () => {
  const terminal = ["succeeded", "failed", "canceled", "timed_out"] as const;

  test("the table is total, and a terminal task never moves", () => {
    checkShape(taskMoves, taskStatuses, terminal, canMoveTask);
    for (const s of taskStatuses)
      assert.equal(isTerminalTask(s), (terminal as readonly string[]).includes(s));
  });

  test("allowed moves", () => {
    for (const [from, to] of [
      ["pending", "running"],
      ["pending", "failed"],
      ["pending", "canceled"],
      ["running", "waiting"],
      ["running", "succeeded"],
      ["running", "failed"],
      ["running", "timed_out"],
      ["running", "canceled"],
      ["waiting", "running"],
      ["waiting", "failed"],
      ["waiting", "canceled"],
    ] as const) {
      assert.ok(canMoveTask(from, to), `${from} → ${to}`);
    }
  });

  test("refused moves", () => {
    for (const [from, to] of [
      ["pending", "waiting"],
      ["pending", "succeeded"],
      ["running", "pending"],
      ["waiting", "pending"],
      ["waiting", "succeeded"],
      ["waiting", "timed_out"],
      ["succeeded", "running"],
      ["canceled", "running"],
      ["failed", "succeeded"],
    ] as const) {
      assert.equal(canMoveTask(from, to), false, `${from} → ${to}`);
    }
  });

  test("the cancel plan of a task with a running job and a waiting step", () => {
    const plan = cancelPlan({ id: "t", status: "waiting" });
    assert.equal(plan.kind, "cancel");
    if (plan.kind !== "cancel") return;
    assert.equal(plan.to, "canceled");
    const { steps, jobs, stop } = plan.cascade;
    assert.ok(steps.from.includes("waiting"), "the waiting step is canceled");
    assert.ok(stop.includes("running"), "the running job is asked to stop");
    assert.equal(
      jobs.from.includes("running"),
      false,
      "and is not marked canceled before its provider says so",
    );
    assert.deepEqual(jobs.from, ["pending"], "a job its provider never created is canceled outright");
    for (const s of steps.from) assert.ok(canMoveStep(s, steps.to), `step ${s} → canceled`);
    for (const s of jobs.from) assert.ok(canMoveJob(s, jobs.to), `job ${s} → canceled`);
  });

  test("the cancel cascade reaches every step and job that has not ended", () => {
    assert.deepEqual(
      cancelCascade.steps.from,
      stepStatuses.filter((s) => stepMoves[s].length > 0),
    );
    assert.deepEqual([...cancelCascade.jobs.from, ...cancelCascade.stop].sort(), [...liveJobStatuses].sort());
  });

  test("a cancel moves a task that has not ended, repeats as nothing, and is refused once it ended", () => {
    for (const status of taskStatuses) {
      const task = { id: "t", status };
      if (status === "canceled") assert.deepEqual(cancelPlan(task), { kind: "unchanged" });
      else if (isTerminalTask(status)) {
        assert.throws(
          () => cancelPlan(task),
          (e: unknown) => e instanceof LonghaulError && e.code === "TASK_NOT_CANCELABLE",
          status,
        );
      } else assert.equal(cancelPlan(task).kind, "cancel", status);
    }
  });
});

describe("step", () => {
  const terminal = ["succeeded", "failed", "timed_out", "canceled"] as const;

  test("the table is total, and a terminal step never moves", () => {
    checkShape(stepMoves, stepStatuses, terminal, canMoveStep);
  });

  test("allowed and refused moves", () => {
    assert.ok(canMoveStep("running", "succeeded"));
    assert.ok(canMoveStep("running", "failed"));
    assert.ok(canMoveStep("running", "canceled"));
    assert.ok(canMoveStep("waiting", "timed_out"));
    assert.ok(canMoveStep("waiting", "canceled"));
    assert.equal(canMoveStep("running", "timed_out"), false, "a step.run does not time out");
    assert.equal(canMoveStep("running", "waiting"), false);
    assert.equal(canMoveStep("waiting", "running"), false);
    assert.equal(canMoveStep("timed_out", "succeeded"), false, "a late result is never applied");
  });

  test("a statement's guard is the states that have not ended and may take each of its outcomes", () => {
    assert.deepEqual(stepGuard(runOutcomes), ["running"], "a run outcome overwrites only a running step");
    assert.deepEqual(stepGuard(waitEnds), ["waiting"], "a wait's end moves only a waiting step");
    assert.deepEqual(stepGuard(["canceled"]), ["running", "waiting"]);
    for (const outcomes of [runOutcomes, waitEnds, ["canceled"] as const]) {
      for (const from of stepGuard(outcomes)) {
        assert.ok(stepMoves[from].length > 0, `${from} has not ended`);
        for (const to of outcomes) assert.ok(from === to || canMoveStep(from, to), `${from} → ${to}`);
      }
    }
    assert.throws(() => stepGuard(["running", "timed_out"]), /No step state/);
  });

  test("a waiting step's deadline ends it by a move the table allows", () => {
    const approval: ApprovalConfig = {
      approvers: [],
      quorum: 1,
      onTimeout: null,
      title: null,
      description: null,
      remindAfterMs: null,
      escalateAfterMs: null,
      escalateTo: [],
    };
    for (const kind of stepKinds) {
      for (const onTimeout of [null, "approve"] as const) {
        const end = timeoutEnd(waitingStep(kind, { ...approval, onTimeout }));
        if (kind === "run") {
          assert.equal(end, null, "a step.run has no deadline");
          continue;
        }
        assert.ok(end, kind);
        assert.ok(canMoveStep("waiting", end.status), `${kind}: waiting → ${end.status}`);
      }
    }
  });
});

function waitingStep(kind: StepKind, config: unknown): StepRow {
  return {
    stepId: "s",
    position: 0,
    kind,
    status: "waiting",
    output: null,
    error: null,
    attempts: 1,
    deadlineAt: 0,
    handedOff: false,
    jobId: null,
    config,
    lateOutput: null,
    createdAt: 0,
    updatedAt: 0,
  };
}

describe("job", () => {
  const terminal = ["succeeded", "failed", "canceled", "timed_out"] as const;
  const eventTypes = Object.keys(jobEventTypes) as JobEventType[];

  test("the table is total, and a terminal job never moves", () => {
    checkShape(jobMoves, jobStatuses, terminal, canMoveJob);
    for (const s of jobStatuses) assert.equal(isTerminalJob(s), (terminal as readonly string[]).includes(s));
  });

  test("forward only: a job may skip ahead, never go back", () => {
    assert.ok(canMoveJob("pending", "succeeded"), "done before it was reported running");
    assert.ok(canMoveJob("created", "timed_out"));
    assert.ok(canMoveJob("running", "canceled"));
    assert.equal(canMoveJob("running", "created"), false);
    assert.equal(canMoveJob("created", "pending"), false);
    assert.equal(canMoveJob("succeeded", "failed"), false);
  });

  test("an event moves a job only where the table allows", () => {
    for (const status of jobStatuses) {
      for (const type of eventTypes) {
        const to = nextJobStatus(status, type);
        assert.equal(to !== null, canMoveJob(status, jobEventTypes[type]), `${status} + ${type}`);
      }
    }
    assert.equal(nextJobStatus("succeeded", "job.running"), null, "running after succeeded is ignored");
  });

  test("an event's effect on its job is a move the table allows, or none", () => {
    for (const status of jobStatuses) {
      for (const type of eventTypes) {
        const effect = jobEventEffect(status, "sim", { eventId: "e", type, jobId: "j" }, 0);
        const to: JobStatus | null =
          effect.kind === "end" ? effect.jobStatus : effect.kind === "move" ? effect.to : null;
        if (to !== null) assert.ok(canMoveJob(status, to), `${status} + ${type} → ${to}`);
        else assert.ok(effect.kind === "late" || effect.kind === "ignored", `${status} + ${type}`);
        if (isTerminalJob(status)) assert.equal(to, null, `terminal ${status} is not moved by ${type}`);
      }
    }
    const late = jobEventEffect("timed_out", "sim", { eventId: "e", type: "job.succeeded", jobId: "j" }, 0);
    assert.equal(late.kind, "late", "a result after the deadline is kept, not applied");
  });

  test("the live states are the table's non-terminal ones; those at the provider, all but the new state", () => {
    assert.deepEqual(
      liveJobStatuses,
      jobStatuses.filter((s) => jobMoves[s].length > 0),
    );
    assert.deepEqual(liveJobStatuses, ["pending", "created", "running"]);
    assert.equal(newJobStatus, "pending");
    assert.deepEqual(atProviderJobStatuses, ["created", "running"]);
    assert.deepEqual(slotHolders, { always: ["created", "running"], whenAdmitted: ["pending"] });
  });

  test("a write of a job move the table refuses is a defect", () => {
    assert.equal(jobMove("running", "succeeded"), "succeeded");
    assert.equal(jobMove("pending", "timed_out"), "timed_out");
    assert.throws(() => jobMove("succeeded", "failed"), /succeeded job cannot move to failed/);
    assert.throws(() => jobMove("running", "created"));
  });

  test("a recorded creation moves a new job to what its provider reports, and nothing else", () => {
    assert.equal(statusOnCreated("pending", "created"), "created");
    assert.equal(statusOnCreated("pending", "running"), "running");
    assert.equal(statusOnCreated("pending", "succeeded"), "succeeded", "done before it was known");
    assert.equal(statusOnCreated("pending", "pending"), "pending");
    for (const current of jobStatuses.filter((s) => s !== "pending")) {
      for (const reported of jobStatuses) {
        assert.equal(statusOnCreated(current, reported), current, `${current} stays, reported ${reported}`);
      }
    }
  });
});

describe("delivery", () => {
  const states = ["pending", "delivered", "failed", "dead", "canceled"] as const;
  const error = { code: "HTTP_STATUS", message: "503" };
  const results: DeliveryAttemptResult[] = [
    { outcome: "delivered", status: 200 },
    { outcome: "retry", status: 503, error, nextAttemptAt: 1 },
    { outcome: "dead", status: 503, error },
    { outcome: "failed", status: 400, error },
    { outcome: "gone", status: 410, error },
  ];

  test("the table is total, and a delivered delivery never moves", () => {
    checkShape(deliveryMoves, states, ["delivered"], canMoveDelivery);
  });

  test("an attempt moves a delivery only where the table allows", () => {
    for (const current of states) {
      for (const r of results) {
        const next = attemptState(current, r);
        assert.ok(next === current || canMoveDelivery(current, next), `${current} + ${r.outcome} → ${next}`);
      }
    }
  });

  test("an attempt on a pending delivery moves it as its outcome says", () => {
    assert.deepEqual(
      results.map((r) => attemptState("pending", r)),
      ["delivered", "pending", "dead", "failed", "failed"],
    );
  });

  test("an attempt that finds its delivery moved on changes it only if it landed", () => {
    for (const current of ["canceled", "dead", "failed"] as const) {
      assert.deepEqual(
        results.map((r) => attemptState(current, r)),
        ["delivered", current, current, current, current],
        current,
      );
    }
    assert.equal(attemptState("delivered", results[1]!), "delivered");
  });

  test("only a dead or failed delivery may be replayed", () => {
    const enabled = { id: "we_1", status: "enabled" as const, disabled_reason: null };
    const replayable = (state: DeliveryState) => {
      try {
        checkReplayable(enabled, { id: "d_1", state });
        return true;
      } catch (e) {
        assert.ok(e instanceof LonghaulError && e.code === "DELIVERY_NOT_REPLAYABLE");
        return false;
      }
    };
    assert.deepEqual(
      states.filter((s) => replayable(s)),
      ["failed", "dead"],
    );
    for (const s of states) assert.equal(replayable(s), canMoveDelivery(s, "pending"), s);
    assert.throws(
      () => checkReplayable({ ...enabled, status: "disabled" }, { id: "d_1", state: "dead" }),
      /disabled/,
    );
  });
});

describe("work item", () => {
  const states: readonly WorkItemStatus[] = ["pending", "leased", "dead"];

  test("the table is total, and a dead item never moves", () => {
    checkShape(workItemMoves, states, ["dead"], canMoveWorkItem);
  });

  test("allowed and refused moves", () => {
    assert.ok(canMoveWorkItem("pending", "leased"), "claimed");
    assert.ok(canMoveWorkItem("leased", "pending"), "retried, parked or its lease expired");
    assert.ok(canMoveWorkItem("leased", "dead"), "its last attempt failed");
    assert.equal(canMoveWorkItem("pending", "dead"), false, "only a leased item is dead-lettered");
    assert.equal(canMoveWorkItem("dead", "pending"), false);
    assert.equal(canMoveWorkItem("dead", "leased"), false);
  });

  const stored = (kind: string, payload: Record<string, unknown>): WorkItem =>
    ({
      id: "wi_1",
      kind,
      tenantId: "tn_1",
      payload,
      runAt: 0,
      attempts: 1,
      maxAttempts: 3,
      status: "leased",
      leaseOwner: "w",
      leaseExpiresAt: 1,
      lastError: null,
    }) as WorkItem;

  test("a claimed item's payload is read for its kind, with the defaults of older rows", () => {
    assert.deepEqual(typedWorkItem(stored("advance", { taskId: "t_1" })).payload, { taskId: "t_1" });
    assert.deepEqual(typedWorkItem(stored("reminder", { taskId: "t_1", stepId: "s" })).payload, {
      taskId: "t_1",
      stepId: "s",
      type: "reminder",
    });
    assert.deepEqual(
      typedWorkItem(stored("reminder", { taskId: "t_1", stepId: "s", type: "escalation" })).payload,
      { taskId: "t_1", stepId: "s", type: "escalation" },
    );
    assert.deepEqual(typedWorkItem(stored("poll", { jobId: "j_1" })).payload, { jobId: "j_1", attempt: 1 });
    assert.deepEqual(typedWorkItem(stored("maintenance", {})).payload, {});
  });

  test("a payload without the field its kind needs, or an unknown kind, is refused naming it", () => {
    for (const [kind, payload, field] of [
      ["advance", {}, "taskId"],
      ["dispatch", { jobId: 7 }, "jobId"],
      ["timeout", { taskId: "t_1" }, "stepId"],
      ["deliver", { deliveryId: "" }, "deliveryId"],
    ] as const) {
      assert.throws(
        () => typedWorkItem(stored(kind, payload)),
        (e: LonghaulError) => e.code === "VALIDATION_FAILED" && e.message.includes(`"${field}"`),
        kind,
      );
    }
    assert.throws(() => typedWorkItem(stored("frob", {})), /unknown kind "frob"/);
  });

  test("after a failed attempt an item is due again, and dead after its last attempt", () => {
    assert.deepEqual(afterFailure({ status: "leased", attempts: 1, maxAttempts: 3 }, 500), {
      to: "pending",
      runAt: 500,
    });
    assert.deepEqual(afterFailure({ status: "leased", attempts: 2, maxAttempts: 3 }, 500), {
      to: "pending",
      runAt: 500,
    });
    assert.deepEqual(afterFailure({ status: "leased", attempts: 3, maxAttempts: 3 }, 500), { to: "dead" });
    assert.deepEqual(
      afterFailure({ status: "leased", attempts: 4, maxAttempts: 3 }, 500),
      { to: "dead" },
      "an item that had more attempts than it may (its maximum lowered) is dead too",
    );
  });

  test("only a leased item fails or is dead-lettered: a write the table refuses is a defect", () => {
    assert.throws(
      () => afterFailure({ status: "pending", attempts: 3, maxAttempts: 3 }, 0),
      /pending work item/,
    );
    assert.throws(() => afterFailure({ status: "dead", attempts: 1, maxAttempts: 3 }, 0), /dead work item/);
    assert.equal(workItemMove("leased", "pending"), "pending");
    assert.throws(() => workItemMove("pending", "dead"));
  });
});

describe("quota admission", () => {
  const tenant = (quotas: Quotas, used = 0, reserved = 0): TenantRow => ({
    id: "tn",
    name: "acme",
    createdAt: 0,
    quotas,
    tokensUsed: used,
    tokensThisPeriod: used,
    tokensReserved: reserved,
    budgetPeriodStart: "2026-01-01",
  });

  test("a new task starts unless its tenant is at its job limit or over budget under park", () => {
    assert.equal(taskStart(null, 0), "started", "no tenant row: no quotas");
    assert.equal(taskStart(tenant({}), 100), "started");
    assert.equal(taskStart(tenant({ max_concurrent_jobs: 2 }), 1), "started");
    assert.equal(taskStart(tenant({ max_concurrent_jobs: 2 }), 2), "parked");
    assert.equal(taskStart(tenant({ token_budget: 10 }, 10), 0), "parked", "park is the default policy");
    assert.equal(
      taskStart(tenant({ token_budget: 10, budget_policy: "reject" }, 10), 0),
      "started",
      "under reject its jobs are refused instead",
    );
  });

  test("a job is admitted by the budget first, then by a free slot", () => {
    assert.deepEqual(admitJob(null, 50, 0), { verdict: "ok", reserve: 0 });
    assert.deepEqual(admitJob(tenant({}), 50, 9), { verdict: "ok", reserve: 0 }, "no budget: nothing held");
    assert.deepEqual(admitJob(tenant({ token_budget: 100 }), 50, 0), { verdict: "ok", reserve: 50 });
    assert.deepEqual(admitJob(tenant({ max_concurrent_jobs: 1 }), null, 1), { verdict: "parked" });
    assert.deepEqual(admitJob(tenant({ token_budget: 10 }, 10), null, 0), { verdict: "parked" });
    assert.deepEqual(admitJob(tenant({ token_budget: 10, budget_policy: "reject" }, 10), null, 0), {
      verdict: "rejected",
    });
  });

  test("slots in use only ever make a verdict worse, so they need counting only when it is still open", () => {
    const quotas: Quotas[] = [
      {},
      { max_concurrent_jobs: 0 },
      { max_concurrent_jobs: 2 },
      { token_budget: 10 },
      { token_budget: 10, budget_policy: "reject" },
      { token_budget: 10, max_concurrent_jobs: 2 },
    ];
    for (const q of quotas) {
      for (const used of [0, 10]) {
        const t = tenant(q, used);
        assert.equal(countsSlots(q), q.max_concurrent_jobs != null);
        assert.equal(admissionLocks(q), q.max_concurrent_jobs != null || q.token_budget != null);
        for (const n of [0, 1, 2, 3]) {
          if (taskStart(t, 0) !== "started")
            assert.equal(taskStart(t, n), taskStart(t, 0), JSON.stringify(q));
          const atZero = admitJob(t, 5, 0);
          if (atZero.verdict !== "ok") assert.deepEqual(admitJob(t, 5, n), atZero, JSON.stringify(q));
          if (!countsSlots(q))
            assert.deepEqual(admitJob(t, 5, n), atZero, "no job limit: slots do not count");
        }
      }
    }
  });
});

describe("ids", () => {
  test("ULIDs sort by time, then by order within a millisecond, and never repeat", () => {
    let t = Date.UTC(2026, 0, 1);
    const clock = { now: () => t };
    const ids = ulidGenerator(clock);
    const made: string[] = [];
    // 300 milliseconds of 10 ids each draw more random bytes than one refill of the pool holds.
    for (let ms = 0; ms < 300; ms++, t++) for (let i = 0; i < 10; i++) made.push(ids.next("evt"));
    assert.equal(new Set(made).size, made.length);
    assert.deepEqual([...made].sort(), made, "creation order is sort order");
    for (const id of made) assert.match(id, /^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
    // The time part is the millisecond, in Crockford base 32.
    assert.equal(made[0]!.slice(4, 14), "01KDVDNA00");
    // A second generator draws other random digits for the same millisecond.
    t = Date.UTC(2026, 0, 1);
    assert.notEqual(ulidGenerator(clock).next("evt").slice(14), made[0]!.slice(14));
  });

  test("the random part counts up within a millisecond, carrying over its digits", () => {
    const ids = ulidGenerator({ now: () => 0 }, (n) => new Uint8Array(n).fill(31));
    ids.next("x");
    // All sixteen digits were Z: the next id wraps them to 0 (the time part is 0 too).
    assert.equal(ids.next("x"), `x_${"0".repeat(26)}`);
    assert.equal(ids.next("x"), `x_${"0".repeat(25)}1`);
  });
});
