import type { Clock } from "../../core/clock.ts";
import type { IdGenerator } from "../../core/ids.ts";
import type { Lease, NewWorkItem } from "../store.ts";

/**
 * What really differs between the dialects inside one SQL text: literals and clauses one of
 * them lacks. Everything else is written once, with `?` placeholders.
 */
export interface Dialect {
  readonly name: "sqlite" | "postgres";
  /** Boolean literals: SQLite stores 1/0 (and its partial indexes are written `= 1`). */
  readonly true: string;
  readonly false: string;
  /** Row locks: PostgreSQL's `FOR UPDATE` / `FOR SHARE`; empty under SQLite's single writer. */
  readonly forUpdate: string;
  readonly forShare: string;
}

export const sqliteDialect: Dialect = { name: "sqlite", true: "1", false: "0", forUpdate: "", forShare: "" };
export const postgresDialect: Dialect = {
  name: "postgres",
  true: "TRUE",
  false: "FALSE",
  forUpdate: " FOR UPDATE",
  forShare: " FOR SHARE",
};

/**
 * The work queue as operations of other families need it. Claiming differs per dialect (SKIP
 * LOCKED against SQLite's single writer), so each dialect supplies these until the queue's
 * own operations are shared too.
 */
export interface QueueOps {
  /** LEASE_LOST unless `lease` is still held; PostgreSQL also locks the item's row. */
  assertLease(lease: Lease): Promise<void>;
  enqueue(items: readonly NewWorkItem[]): Promise<void>;
  complete(lease: Lease): Promise<void>;
  fail(lease: Lease, error: string, retryAt: number): Promise<"retry" | "dead">;
}

/**
 * One store operation's view of its transaction. An operation is an async function of a `Tx`
 * and awaits nothing else: under SQLite every call resolves at once inside the batch's
 * transaction, under PostgreSQL each is a round trip on the operation's own connection.
 *
 * SQL texts use `?` placeholders; PostgreSQL's side rewrites them to `$n` once per text.
 * Booleans bound as parameters go through `bool`; `bigint` columns read back as numbers on
 * both; JSON columns are text written with `json()` and parsed by the row mappers.
 */
export interface Tx {
  readonly d: Dialect;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  all<T>(text: string, params?: readonly unknown[]): Promise<T[]>;
  get<T>(text: string, params?: readonly unknown[]): Promise<T | undefined>;
  /** Runs a statement; resolves to how many rows it changed. */
  run(text: string, params?: readonly unknown[]): Promise<number>;
  /** A boolean as a parameter value. */
  bool(v: boolean): unknown;
  /**
   * Serializes the transactions that take the same key until they end: an advisory lock on
   * PostgreSQL, nothing under SQLite, whose one writer already runs operations one at a time.
   */
  lock(key: string): Promise<void>;
  /**
   * Emits a task event: PostgreSQL appends it just before COMMIT under the tenant's lock and
   * NOTIFYs it; SQLite appends it at once and announces it after COMMIT. Both fan it out.
   */
  emit(tenantId: string, taskId: string, type: string, data: unknown): void;
  /** Work may have become due: the commit wakes the workers (NOTIFY, or in-process). */
  wake(): void;
  readonly queue: QueueOps;
}
