import type { Clock } from "../../core/clock.ts";
import { isJobEventType, isTerminalJob, jobEventTypes } from "../../core/job.ts";
import { signStandardWebhook } from "../../webhooks/standard-webhooks.ts";
import type { SimStore } from "./sim-store.ts";
import type { TimerSet } from "./timer-set.ts";

export interface WebhookSenderOptions {
  store: SimStore;
  timers: TimerSet;
  clock: Clock;
  /** The `whsec_` secret every delivery is signed with (Standard Webhooks). */
  secret: string;
  /** Delay before each redelivery; once exhausted the delivery is given up. */
  retryScheduleMs: readonly number[];
  attemptTimeoutMs?: number;
  /** Told about a failure of the sender itself (not of a delivery, which is retried). */
  onError: (err: unknown) => void;
}

/**
 * Sends stored deliveries, signed with Standard Webhooks, and redelivers on a non-2xx answer
 * or a network error following the retry schedule. `webhook-id` is the event id, the same on
 * every attempt and on both copies of a duplicated event; `webhook-timestamp` is the time of
 * the attempt. A delivery is removed only once answered 2xx or given up, so a closed
 * simulator leaves the rest pending for the next one on the same state file.
 */
export class WebhookSender {
  readonly #o: WebhookSenderOptions;
  readonly #abort = new AbortController();
  readonly #inFlight = new Set<Promise<void>>();

  constructor(options: WebhookSenderOptions) {
    this.#o = options;
  }

  /** Attempts delivery `id` at `dueAt` (at once if that has passed). */
  schedule(id: number, dueAt: number): void {
    this.#o.timers.after(`delivery:${id}`, dueAt - this.#o.clock.now(), () => {
      const attempt = this.#attempt(id).catch(this.#o.onError);
      this.#inFlight.add(attempt);
      void attempt.then(() => this.#inFlight.delete(attempt));
    });
  }

  /** Lets the deliveries held back behind `jobId`'s terminal event go now. */
  releaseHeld(jobId: string): void {
    const now = this.#o.clock.now();
    for (const id of this.#o.store.releaseHeld(jobId, now)) this.schedule(id, now);
  }

  /** Schedules every stored delivery: the ones pending, and the ones held behind an ended job. */
  resume(): void {
    const now = this.#o.clock.now();
    for (const jobId of this.#o.store.endedJobsWithHeldDeliveries()) this.#o.store.releaseHeld(jobId, now);
    for (const d of this.#o.store.dueDeliveries()) this.schedule(d.id, d.dueAt ?? now);
  }

  /** Aborts the attempts in flight and waits for them to settle; call after the timers are cleared. */
  async close(): Promise<void> {
    this.#abort.abort();
    await Promise.allSettled([...this.#inFlight]);
  }

  async #attempt(id: number): Promise<void> {
    const { store, clock, secret, retryScheduleMs } = this.#o;
    const d = store.delivery(id);
    if (d === undefined || d.dueAt === null) return;
    const timestampS = Math.floor(clock.now() / 1000);
    let ok = false;
    try {
      const res = await fetch(d.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "webhook-id": d.eventId,
          "webhook-timestamp": String(timestampS),
          "webhook-signature": signStandardWebhook({ id: d.eventId, timestampS, body: d.payload, secret }),
        },
        body: d.payload,
        redirect: "manual",
        signal: AbortSignal.any([
          this.#abort.signal,
          AbortSignal.timeout(this.#o.attemptTimeoutMs ?? 10_000),
        ]),
      });
      await res.arrayBuffer();
      ok = res.status >= 200 && res.status < 300;
    } catch {
      ok = false;
    }
    // Closing aborts attempts mid-flight: those are not failures, and the store may be closing.
    if (this.#abort.signal.aborted) return;

    const attempts = d.attempts + 1;
    const retryIn = retryScheduleMs[attempts - 1];
    if (ok) store.finishDelivery(id, "deliveries");
    else if (retryIn === undefined) store.finishDelivery(id, "failedDeliveries");
    else {
      const dueAt = clock.now() + retryIn;
      store.retryDelivery(id, attempts, dueAt);
      this.schedule(id, dueAt);
    }
    if (attempts === 1 && isTerminalEvent(d.eventType)) this.releaseHeld(d.jobId);
  }
}

/** Whether an event of `type` ends its job (`job.succeeded`, `job.failed`, `job.canceled`). */
export function isTerminalEvent(type: string): boolean {
  return isJobEventType(type) && isTerminalJob(jobEventTypes[type]);
}
