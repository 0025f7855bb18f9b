import type { Pool, PoolClient } from "pg";
import type { Clock } from "../../core/clock.ts";
import type { IdGenerator } from "../../core/ids.ts";
import type { AppendedEvent } from "../sql/tx.ts";
import { type Ctx, type Effects, Sql } from "./db.ts";
import { appendTaskEvents } from "./event-log.ts";
import { isConnectionError, type PostgresTarget, resourceError, unavailable } from "./pool.ts";

/** Who hears of this process's commits (the notifier). */
export interface CommitHooks {
  /** The events a transaction appended, just before its COMMIT is sent. */
  committing(events: readonly AppendedEvent[]): void;
  /** After COMMIT: whether work may have become due, and the events now durable. */
  committed(work: boolean, events: readonly AppendedEvent[]): void;
}

type Mode = "write" | "statement" | "snapshot" | "read";

const BEGIN: Record<Mode, string | null> = {
  write: "BEGIN",
  statement: null,
  snapshot: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
  read: null,
};

/** A connection that failed before COMMIT was sent is retried on a fresh one this many times. */
const CONNECTION_RETRIES = 2;
/** Deadlocks, serialization failures and the queue's guarding unique indexes: retried whole. */
const CONFLICT_RETRIES = 8;

/**
 * Runs store operations, each whole in one transaction on one pooled connection.
 *
 * An operation is a function of its `Ctx` only, so it can be run again from the start: after
 * a conflict PostgreSQL resolves by aborting one side (deadlock, a unique index that closes a
 * race), and after a connection that died before COMMIT was sent (nothing was applied). A
 * connection lost during COMMIT leaves the outcome unknown and surfaces as STORE_UNAVAILABLE.
 */
export class Transactions {
  constructor(
    private readonly pool: Pool,
    private readonly env: {
      clock: Clock;
      ids: IdGenerator;
      target: PostgresTarget;
      /** Payload of this store's work NOTIFYs, so it can skip the ones it sent itself. */
      nodeId: string;
    },
    private readonly hooks: CommitHooks,
  ) {}

  /** Set when a statement failed with disk_full; the store's health check clears it. */
  storageFull = false;

  /** A failed operation's error as its caller sees it; notes a full disk for health(). */
  private surface(err: unknown): unknown {
    const mapped = resourceError(err);
    if (mapped?.code === "STORAGE_FULL") this.storageFull = true;
    return mapped ?? err;
  }

  /** A read-write transaction; its task events and work wake-ups are announced at commit. */
  write<T>(op: (c: Ctx) => Promise<T>): Promise<T> {
    return this.run("write", op);
  }
  /**
   * A write that is one statement, atomic on its own, so it runs without the BEGIN and COMMIT
   * round trips (the claim, a completion). It emits no task events; if it makes work due, its
   * SQL sends the NOTIFY itself (`Ctx.wake`), and local listeners are woken here.
   */
  statement<T>(op: (c: Ctx) => Promise<T>): Promise<T> {
    return this.run("statement", op);
  }
  /** Several reads that see one consistent snapshot. */
  snapshot<T>(op: (c: Ctx) => Promise<T>): Promise<T> {
    return this.run("snapshot", op);
  }
  /** A single read statement, with no transaction around it. */
  read<T>(op: (c: Ctx) => Promise<T>): Promise<T> {
    return this.run("read", op);
  }

  private async run<T>(mode: Mode, op: (c: Ctx) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let client: PoolClient;
      try {
        client = await this.pool.connect();
      } catch (err) {
        throw isConnectionError(err) ? unavailable(err) : err;
      }
      // A checked-out connection that the server drops between two queries emits `error`
      // with no pool listener attached; unhandled, that would crash the process.
      let dropped: Error | null = null;
      const onError = (err: Error) => {
        dropped = err;
      };
      client.on("error", onError);
      const release = (err?: Error) => {
        client.off("error", onError);
        client.release(err);
      };

      const effects: Effects = { work: false, events: [] };
      const { clock, ids, target } = this.env;
      const wake = { channel: target.channels.work, payload: this.env.nodeId };
      const c: Ctx = { sql: new Sql(client), clock, ids, schema: target.schema, wake, effects };
      const begin = BEGIN[mode];
      let committing = false;
      let value: T;
      let events: AppendedEvent[] = [];
      try {
        if (begin) await client.query(begin);
        value = await op(c);
        if (mode !== "write" && (effects.events.length > 0 || (effects.work && mode !== "statement"))) {
          throw new Error(`A ${mode} operation emitted task events or work; it must run as a write.`);
        }
        if (mode === "write") {
          events = await appendTaskEvents(c, target.channels.events);
          if (effects.work) await c.sql.run("SELECT pg_notify($1, $2)", [wake.channel, wake.payload]);
        }
        committing = true;
        if (events.length > 0) this.hooks.committing(events);
        if (begin) await client.query("COMMIT");
        release();
      } catch (err) {
        if (dropped !== null || isConnectionError(err)) {
          release(asError(err));
          if (!committing && attempt < CONNECTION_RETRIES) continue;
          throw unavailable(err);
        }
        if (begin) {
          try {
            await client.query("ROLLBACK");
          } catch (rollbackErr) {
            release(asError(rollbackErr));
            throw isConnectionError(rollbackErr) ? unavailable(err) : this.surface(err);
          }
        }
        release();
        if (isConflict(err) && attempt < CONFLICT_RETRIES) {
          await pause(attempt);
          continue;
        }
        throw this.surface(err);
      }
      if (effects.work || events.length > 0) this.hooks.committed(effects.work, events);
      return value;
    }
  }
}

/** Unique indexes that are the last guard of a race between two transactions (see migrations). */
const GUARD_INDEXES = new Set(["work_dedupe", "work_leased_key"]);

function isConflict(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string };
  if (e.code === "40001" || e.code === "40P01") return true;
  return e.code === "23505" && e.constraint !== undefined && GUARD_INDEXES.has(e.constraint);
}

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/** A short, jittered pause so two retrying transactions do not collide again in step. */
const pause = (attempt: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
