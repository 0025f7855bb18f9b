import { createRequire } from "node:module";
import type Database from "better-sqlite3";
import { LonghaulError } from "../../core/errors.ts";
import type { JobUsage } from "../../core/provider-event.ts";
import { BATCH_SCHEMA, SimBatchStore } from "./sim-batch-store.ts";

export type SimJobStatus = "queued" | "running" | "succeeded" | "failed" | "canceled";

/** A job as the simulator keeps it. Times are milliseconds since the epoch. */
export interface SimJob {
  id: string;
  idempotencyKey: string;
  input: unknown;
  webhookUrl: string;
  status: SimJobStatus;
  output?: unknown;
  error?: { code: string; message: string } | undefined;
  usage?: JobUsage | undefined;
  createdAt: number;
  /** When `job.running` is due. */
  runningAt: number;
  /** When the job is due to end. */
  endsAt: number;
  endedAt: number | null;
}

/** One event on its way to one webhook URL. A duplicated event has two deliveries. */
export interface SimDelivery {
  id: number;
  eventId: string;
  eventType: string;
  jobId: string;
  url: string;
  /** The event's JSON, fixed when the event was made: every attempt sends the same bytes. */
  payload: string;
  /** Attempts made so far. */
  attempts: number;
  /** When the next attempt is due; `null` while held back behind the job's terminal event. */
  dueAt: number | null;
}

export interface SimStats {
  jobsCreated: number;
  /** Idempotency key → jobs created with it; anything but 1 is a double dispatch. */
  createsByKey: Record<string, number>;
  /** Deliveries answered with a 2xx (each copy of a duplicated event counts). */
  deliveries: number;
  /** Deliveries given up after the whole retry schedule failed. */
  failedDeliveries: number;
  dropped: number;
  duplicated: number;
  reordered: number;
  failedCreates: number;
  /** Creations answered 429 on purpose (chaos `throttleCreate`). */
  throttledCreates: number;
}

export type SimCounter =
  | "deliveries"
  | "failedDeliveries"
  | "dropped"
  | "duplicated"
  | "reordered"
  | "failedCreates"
  | "throttledCreates";

// 2: files and batches (sim-batch-store.ts); a version-1 file gains their tables on open.
const SCHEMA_VERSION = 2;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  input TEXT NOT NULL,
  webhook_url TEXT NOT NULL,
  status TEXT NOT NULL,
  output TEXT,
  error TEXT,
  usage TEXT,
  created_at INTEGER NOT NULL,
  running_at INTEGER NOT NULL,
  ends_at INTEGER NOT NULL,
  ended_at INTEGER
);
CREATE TABLE IF NOT EXISTS deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  job_id TEXT NOT NULL,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  due_at INTEGER
);
CREATE INDEX IF NOT EXISTS deliveries_by_job ON deliveries (job_id);
CREATE TABLE IF NOT EXISTS create_attempts (
  idempotency_key TEXT PRIMARY KEY,
  attempts INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
`;

interface JobRow {
  id: string;
  idempotency_key: string;
  input: string;
  webhook_url: string;
  status: SimJobStatus;
  output: string | null;
  error: string | null;
  usage: string | null;
  created_at: number;
  running_at: number;
  ends_at: number;
  ended_at: number | null;
}

interface DeliveryRow {
  id: number;
  event_id: string;
  event_type: string;
  job_id: string;
  url: string;
  payload: string;
  attempts: number;
  due_at: number | null;
}

/**
 * The simulator's state in SQLite: in memory by default, in a file when the simulator must
 * survive a restart. Every operation is synchronous and atomic on its own; `transaction`
 * groups several, so a job's state change and the event it sends are stored together.
 */
export class SimStore {
  readonly #db: Database.Database;
  /** Files and batches, in the same database. */
  readonly batches: SimBatchStore;

  /** Opens (and creates) the state; throws `SCHEMA_TOO_NEW` for a file of a newer simulator. */
  constructor(file?: string) {
    // better-sqlite3 is an optional dependency, loaded when a simulator first opens its state.
    const Sqlite = createRequire(import.meta.url)("better-sqlite3") as typeof Database;
    this.#db = new Sqlite(file ?? ":memory:");
    if (file !== undefined) {
      this.#db.pragma("journal_mode = WAL");
      // A simulator stands in for a remote service; surviving a process restart is enough.
      this.#db.pragma("synchronous = NORMAL");
    }
    const version = this.#db.pragma("user_version", { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      this.#db.close();
      throw new LonghaulError(
        "SCHEMA_TOO_NEW",
        `The simulator state file has schema ${version}, newer than this simulator's ${SCHEMA_VERSION}; upgrade longhaul or use another file.`,
      );
    }
    this.#db.transaction(() => {
      this.#db.exec(SCHEMA);
      this.#db.exec(BATCH_SCHEMA);
      this.#db.pragma(`user_version = ${SCHEMA_VERSION}`);
    })();
    this.batches = new SimBatchStore(this.#db);
  }

  transaction<T>(fn: () => T): T {
    return this.#db.transaction(fn)();
  }

  close(): void {
    this.#db.close();
  }

  job(id: string): SimJob | undefined {
    const row = this.#db.prepare("SELECT * FROM jobs WHERE id = ?").get(id) as JobRow | undefined;
    return row && toJob(row);
  }

  jobByKey(key: string): SimJob | undefined {
    const row = this.#db.prepare("SELECT * FROM jobs WHERE idempotency_key = ?").get(key) as
      | JobRow
      | undefined;
    return row && toJob(row);
  }

  /** Jobs that have not ended, oldest first. */
  openJobs(): SimJob[] {
    const rows = this.#db
      .prepare("SELECT * FROM jobs WHERE ended_at IS NULL ORDER BY created_at")
      .all() as JobRow[];
    return rows.map(toJob);
  }

  /** Inserts a new job; throws if its id or idempotency key exists (callers look the key up first). */
  insertJob(job: SimJob): void {
    this.#db
      .prepare(
        `INSERT INTO jobs (id, idempotency_key, input, webhook_url, status, created_at, running_at, ends_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        job.id,
        job.idempotencyKey,
        JSON.stringify(job.input ?? null),
        job.webhookUrl,
        job.status,
        job.createdAt,
        job.runningAt,
        job.endsAt,
      );
  }

  /** queued → running. Returns false, changing nothing, from any other status. */
  markRunning(id: string): boolean {
    return (
      this.#db.prepare("UPDATE jobs SET status = 'running' WHERE id = ? AND status = 'queued'").run(id)
        .changes === 1
    );
  }

  /** Ends a job. Returns false, changing nothing, when it has already ended. */
  endJob(
    id: string,
    end: {
      status: "succeeded" | "failed" | "canceled";
      output?: unknown;
      error?: unknown;
      usage?: unknown;
      endedAt: number;
    },
  ): boolean {
    const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
    return (
      this.#db
        .prepare(
          "UPDATE jobs SET status = ?, output = ?, error = ?, usage = ?, ended_at = ? WHERE id = ? AND ended_at IS NULL",
        )
        .run(end.status, json(end.output), json(end.error), json(end.usage), end.endedAt, id).changes === 1
    );
  }

  /** Counts one more creation request with `key` and returns its number, from 1. */
  nextCreateAttempt(key: string): number {
    const row = this.#db
      .prepare(
        `INSERT INTO create_attempts (idempotency_key, attempts) VALUES (?, 1)
         ON CONFLICT (idempotency_key) DO UPDATE SET attempts = attempts + 1 RETURNING attempts`,
      )
      .get(key) as { attempts: number };
    return row.attempts;
  }

  /** Stores a delivery and returns its id. */
  insertDelivery(d: Omit<SimDelivery, "id" | "attempts">): number {
    const info = this.#db
      .prepare(
        "INSERT INTO deliveries (event_id, event_type, job_id, url, payload, due_at) VALUES (?, ?, ?, ?, ?, ?)",
      )
      .run(d.eventId, d.eventType, d.jobId, d.url, d.payload, d.dueAt);
    return Number(info.lastInsertRowid);
  }

  delivery(id: number): SimDelivery | undefined {
    const row = this.#db.prepare("SELECT * FROM deliveries WHERE id = ?").get(id) as DeliveryRow | undefined;
    return row && toDelivery(row);
  }

  /** Deliveries waiting for an attempt (not held back). */
  dueDeliveries(): SimDelivery[] {
    const rows = this.#db
      .prepare("SELECT * FROM deliveries WHERE due_at IS NOT NULL ORDER BY due_at, id")
      .all() as DeliveryRow[];
    return rows.map(toDelivery);
  }

  /** Makes the held deliveries of `jobId` due at `dueAt`; returns their ids. */
  releaseHeld(jobId: string, dueAt: number): number[] {
    const rows = this.#db
      .prepare("UPDATE deliveries SET due_at = ? WHERE job_id = ? AND due_at IS NULL RETURNING id")
      .all(dueAt, jobId) as { id: number }[];
    return rows.map((r) => r.id);
  }

  /** Jobs that have ended but still hold a delivery back. */
  endedJobsWithHeldDeliveries(): string[] {
    const rows = this.#db
      .prepare(
        `SELECT DISTINCT d.job_id FROM deliveries d JOIN jobs j ON j.id = d.job_id
         WHERE d.due_at IS NULL AND j.ended_at IS NOT NULL`,
      )
      .all() as { job_id: string }[];
    return rows.map((r) => r.job_id);
  }

  /** Records a failed attempt and when the next one is due. */
  retryDelivery(id: number, attempts: number, dueAt: number): void {
    this.#db.prepare("UPDATE deliveries SET attempts = ?, due_at = ? WHERE id = ?").run(attempts, dueAt, id);
  }

  /** Removes a delivery that succeeded or was given up, and counts the outcome. */
  finishDelivery(id: number, outcome: "deliveries" | "failedDeliveries"): void {
    this.transaction(() => {
      this.#db.prepare("DELETE FROM deliveries WHERE id = ?").run(id);
      this.bump(outcome);
    });
  }

  bump(counter: SimCounter, by = 1): void {
    this.#db
      .prepare(
        "INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
      )
      .run(counter, by);
  }

  stats(): SimStats {
    const counters = Object.fromEntries(
      (this.#db.prepare("SELECT name, value FROM counters").all() as { name: string; value: number }[]).map(
        (r) => [r.name, r.value],
      ),
    );
    const byKey = this.#db
      .prepare("SELECT idempotency_key AS key, count(*) AS n FROM jobs GROUP BY idempotency_key")
      .all() as { key: string; n: number }[];
    const createsByKey: Record<string, number> = {};
    for (const { key, n } of byKey) createsByKey[key] = n;
    return {
      jobsCreated: byKey.reduce((sum, r) => sum + r.n, 0),
      createsByKey,
      deliveries: counters.deliveries ?? 0,
      failedDeliveries: counters.failedDeliveries ?? 0,
      dropped: counters.dropped ?? 0,
      duplicated: counters.duplicated ?? 0,
      reordered: counters.reordered ?? 0,
      failedCreates: counters.failedCreates ?? 0,
      throttledCreates: counters.throttledCreates ?? 0,
    };
  }
}

function toJob(r: JobRow): SimJob {
  const parse = (s: string | null) => (s === null ? undefined : JSON.parse(s));
  return {
    id: r.id,
    idempotencyKey: r.idempotency_key,
    input: JSON.parse(r.input),
    webhookUrl: r.webhook_url,
    status: r.status,
    output: parse(r.output),
    error: parse(r.error),
    usage: parse(r.usage),
    createdAt: r.created_at,
    runningAt: r.running_at,
    endsAt: r.ends_at,
    endedAt: r.ended_at,
  };
}

function toDelivery(r: DeliveryRow): SimDelivery {
  return {
    id: r.id,
    eventId: r.event_id,
    eventType: r.event_type,
    jobId: r.job_id,
    url: r.url,
    payload: r.payload,
    attempts: r.attempts,
    dueAt: r.due_at,
  };
}
