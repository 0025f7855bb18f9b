import type { Clock } from "../../core/clock.ts";
import type { IdGenerator } from "../../core/ids.ts";
import { type ChaosOptions, eventChaos, failsCreate, throttlesCreate } from "./chaos.ts";
import { type ModelInput, runModel } from "./llm.ts";
import type { SimJob, SimStore } from "./sim-store.ts";
import type { TimerSet } from "./timer-set.ts";
import { isTerminalEvent, type WebhookSender } from "./webhook-sender.ts";

export interface JobRunnerOptions {
  store: SimStore;
  sender: WebhookSender;
  timers: TimerSet;
  clock: Clock;
  ids: IdGenerator;
  seed: number;
  chaos: ChaosOptions;
  runningAfterMs: number;
  defaultDurationMs: number;
}

/** Deliveries to start once the transaction that stored them has committed. */
interface Plan {
  deliveries: { id: number; dueAt: number }[];
  /** A job whose terminal event was dropped: what it held back may go at once. */
  release?: string;
}

const NOTHING: Plan = { deliveries: [] };

/** What an event is about: a job, or a batch (whose id its events carry as `job_id`). */
export type EventSubject = Pick<SimJob, "id" | "idempotencyKey" | "webhookUrl">;

/**
 * Moves jobs through queued → running → succeeded | failed | canceled on schedule, and turns
 * each move into an event on its way out. A move and its event's deliveries are stored in
 * one transaction, so a restarted simulator never has one without the other. Every chaos
 * decision is a function of (seed, idempotency key, event type).
 */
export class JobRunner {
  readonly #o: JobRunnerOptions;

  constructor(options: JobRunnerOptions) {
    this.#o = options;
  }

  /**
   * Counts a creation attempt with `key` and says whether chaos lets it through (`ok`), or
   * refuses it as unavailable (503) or rate-limited (429). A refused attempt creates nothing;
   * the next attempt with the same key rolls again.
   */
  admits(key: string): "ok" | "unavailable" | "throttled" {
    const { store, seed, chaos } = this.#o;
    const attempt = store.nextCreateAttempt(key);
    if (throttlesCreate(seed, chaos, key, attempt)) {
      store.bump("throttledCreates");
      return "throttled";
    }
    if (!failsCreate(seed, chaos, key, attempt)) return "ok";
    store.bump("failedCreates");
    return "unavailable";
  }

  /** The `Retry-After` of a rate-limited creation, in seconds. */
  get retryAfterS(): number {
    return this.#o.chaos.retryAfterS ?? 7;
  }

  /** The job of `key`, created and scheduled unless one exists (`created` says which). */
  create(key: string, input: ModelInput, webhookUrl: string): { job: SimJob; created: boolean } {
    const { store, clock, ids } = this.#o;
    const result = store.transaction(() => {
      const existing = store.jobByKey(key);
      if (existing) return { job: existing, created: false };
      const createdAt = clock.now();
      const durationMs = input.delay_ms ?? this.#o.defaultDurationMs;
      const job: SimJob = {
        id: ids.next("job"),
        idempotencyKey: key,
        input,
        webhookUrl,
        status: "queued",
        createdAt,
        runningAt: createdAt + Math.min(this.#o.runningAfterMs, durationMs),
        endsAt: createdAt + durationMs,
        endedAt: null,
      };
      store.insertJob(job);
      return { job, created: true };
    });
    if (result.created) this.#schedule(result.job);
    return result;
  }

  /** The job as of now: a move whose time has come is made before answering. */
  job(id: string): SimJob | undefined {
    const job = this.#o.store.job(id);
    if (job === undefined) return undefined;
    const now = this.#o.clock.now();
    if (job.status === "queued" && now >= job.runningAt) this.#start(id);
    if (job.endedAt === null && now >= job.endsAt) this.#finish(id);
    return this.#o.store.job(id);
  }

  /** Cancels a job that has not ended and sends `job.canceled`; `canceled: false` if it had ended. */
  cancel(id: string): { job: SimJob; canceled: boolean } | undefined {
    const job = this.job(id);
    if (job === undefined) return undefined;
    if (job.endedAt !== null) return { job, canceled: false };
    this.#unschedule(id);
    this.#run(() => {
      if (!this.#o.store.endJob(id, { status: "canceled", endedAt: this.#o.clock.now() })) return NOTHING;
      return this.#emit(job, "job.canceled", {});
    });
    return { job: this.#o.store.job(id)!, canceled: true };
  }

  /** Schedules every job that has not ended; an overdue one moves at once. */
  resume(): void {
    for (const job of this.#o.store.openJobs()) this.#schedule(job);
  }

  #schedule(job: SimJob): void {
    const now = this.#o.clock.now();
    if (job.status === "queued")
      this.#o.timers.after(`run:${job.id}`, job.runningAt - now, () => this.#start(job.id));
    this.#o.timers.after(`end:${job.id}`, job.endsAt - now, () => this.#finish(job.id));
  }

  #unschedule(id: string): void {
    this.#o.timers.cancel(`run:${id}`);
    this.#o.timers.cancel(`end:${id}`);
  }

  #start(id: string): void {
    this.#run(() => {
      const job = this.#o.store.job(id);
      if (job === undefined || !this.#o.store.markRunning(id)) return NOTHING;
      return this.#emit(job, "job.running", {});
    });
  }

  #finish(id: string): void {
    const job = this.#o.store.job(id);
    if (job === undefined || job.endedAt !== null) return;
    // `job.running` always precedes the end, even for a job whose duration is zero.
    if (job.status === "queued") this.#start(id);
    this.#unschedule(id);
    const result = runModel(job.input as ModelInput);
    this.#run(() => {
      const endedAt = this.#o.clock.now();
      if (result.ok) {
        const { output, usage } = result;
        if (!this.#o.store.endJob(id, { status: "succeeded", output, usage, endedAt })) return NOTHING;
        return this.#emit(job, "job.succeeded", { output, usage });
      }
      const { error, usage } = result;
      if (!this.#o.store.endJob(id, { status: "failed", error, usage, endedAt })) return NOTHING;
      return this.#emit(job, "job.failed", { error, usage });
    });
  }

  /**
   * Makes `change` (to a batch, say) and, when it changed something, sends `type` for
   * `subject` as a job's move would: in one transaction, with the same chaos.
   */
  moveWithEvent(
    subject: EventSubject,
    type: string,
    data: Record<string, unknown>,
    change: () => boolean,
  ): void {
    this.#run(() => (change() ? this.#emit(subject, type, data) : NOTHING));
  }

  /** Runs a move in a transaction, then starts the deliveries it stored. */
  #run(move: () => Plan): void {
    const plan = this.#o.store.transaction(move);
    for (const d of plan.deliveries) this.#o.sender.schedule(d.id, d.dueAt);
    if (plan.release !== undefined) this.#o.sender.releaseHeld(plan.release);
  }

  /** Makes the event and stores its deliveries as chaos decides; call inside a transaction. */
  #emit(job: EventSubject, type: string, data: Record<string, unknown>): Plan {
    const { store, clock, ids } = this.#o;
    const now = clock.now();
    const fate = eventChaos(this.#o.seed, this.#o.chaos, job.idempotencyKey, type);
    if (fate.drop) {
      store.bump("dropped");
      return isTerminalEvent(type) ? { deliveries: [], release: job.id } : NOTHING;
    }
    const eventId = ids.next("evt");
    const payload = JSON.stringify({
      id: eventId,
      type,
      created_at: new Date(now).toISOString(),
      data: { job_id: job.id, ...data },
    });
    const delivery = { eventId, eventType: type, jobId: job.id, url: job.webhookUrl, payload };
    if (fate.reorder) {
      store.insertDelivery({ ...delivery, dueAt: null });
      store.bump("reordered");
      return NOTHING;
    }
    const dueAt = now + fate.delayMs;
    const deliveries = [{ id: store.insertDelivery({ ...delivery, dueAt }), dueAt }];
    if (fate.duplicate) {
      deliveries.push({ id: store.insertDelivery({ ...delivery, dueAt }), dueAt });
      store.bump("duplicated");
    }
    return { deliveries };
  }
}
