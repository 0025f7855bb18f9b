import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type Clock, systemClock } from "../../core/clock.ts";
import { LonghaulError } from "../../core/errors.ts";
import { ulidGenerator } from "../../core/ids.ts";
import { signStandardWebhook } from "../../webhooks/standard-webhooks.ts";
import { BatchRunner } from "./batch-runner.ts";
import { type ChaosOptions, checkChaos } from "./chaos.ts";
import { JobRunner } from "./job-runner.ts";
import { simRequestHandler } from "./sim-routes.ts";
import { type SimStats, SimStore } from "./sim-store.ts";
import { TimerSet } from "./timer-set.ts";
import { WebhookSender } from "./webhook-sender.ts";

export interface SimulatorOptions {
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The `whsec_` secret every webhook is signed with (Standard Webhooks). */
  secret: string;
  /** Chaos decisions are a function of the seed; default 1. */
  seed?: number;
  chaos?: ChaosOptions;
  /** `job.running` is due this long after creation; default 20. */
  runningAfterMs?: number;
  /** A job ends this long after creation unless `input.delay_ms` says otherwise; default 50. */
  defaultDurationMs?: number;
  /** Redelivery delays after a non-2xx answer or a network error; then the delivery is given up. */
  retryScheduleMs?: number[];
  /** A SQLite file that keeps jobs and undelivered events across a restart; memory otherwise. */
  stateFile?: string;
  clock?: Clock;
  /** Told about unexpected failures in the background; default: written to stderr. */
  onError?: (err: unknown) => void;
}

export interface Simulator {
  /** `http://host:port`, the base URL of the simulator's API. */
  url: string;
  port: number;
  /** Stops the timers, aborts deliveries in flight, closes the server and the state. */
  close(): Promise<void>;
  stats(): SimStats;
}

export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [100, 500, 2000, 5000, 10_000, 30_000, 60_000];

/**
 * Starts the provider simulator (ARCHITECTURE §4.8): an asynchronous LLM API over plain HTTP that
 * sends signed webhooks, deterministic for a seed. With `stateFile`, a simulator started on
 * the file of a closed one carries on: jobs end on schedule (at once when overdue), pending
 * deliveries go out, and idempotency keys still name their jobs.
 */
export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  const chaos = options.chaos ?? {};
  checkChaos(chaos);
  checkSchedule(options.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS);
  // Fails now, with CONFIG_INVALID, rather than at the first delivery.
  signStandardWebhook({ id: "msg_check", timestampS: 0, body: "", secret: options.secret });

  const clock = options.clock ?? systemClock;
  const onError = options.onError ?? ((err: unknown) => console.error("longhaul simulator:", err));
  const store = new SimStore(options.stateFile);
  const timers = new TimerSet(onError);
  const sender = new WebhookSender({
    store,
    timers,
    clock,
    secret: options.secret,
    retryScheduleMs: options.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS,
    onError,
  });
  const runner = new JobRunner({
    store,
    sender,
    timers,
    clock,
    ids: ulidGenerator(clock),
    seed: options.seed ?? 1,
    chaos,
    runningAfterMs: options.runningAfterMs ?? 20,
    defaultDurationMs: options.defaultDurationMs ?? 50,
  });

  const batches = new BatchRunner({
    store,
    jobs: runner,
    timers,
    clock,
    ids: ulidGenerator(clock),
    defaultDurationMs: options.defaultDurationMs ?? 50,
  });

  const server = createServer(simRequestHandler(runner, () => store.stats(), batches));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    store.close();
    throw err;
  }
  server.on("clientError", (_err, socket) => socket.destroy());
  runner.resume();
  batches.resume();
  sender.resume();

  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    stats: () => store.stats(),
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        timers.clear();
        await sender.close();
        await closed;
        store.close();
      })();
      return closing;
    },
  };
}

function checkSchedule(schedule: readonly number[]): void {
  if (!schedule.every((ms) => Number.isFinite(ms) && ms >= 0)) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `retryScheduleMs lists delays in milliseconds, each 0 or more; got [${schedule.join(", ")}].`,
    );
  }
}
