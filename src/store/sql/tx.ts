import type { Clock } from "../../core/clock.ts";
import type { IdGenerator } from "../../core/ids.ts";
import type { NewWorkItem } from "../store.ts";

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
  /** `FOR UPDATE SKIP LOCKED`: pass over rows another transaction holds; empty under SQLite. */
  readonly skipLocked: string;
  /** The scalar smaller and larger of two values: SQLite's `MIN`/`MAX`, PostgreSQL's `LEAST`/`GREATEST`. */
  readonly least: string;
  readonly greatest: string;
}

export const sqliteDialect: Dialect = {
  name: "sqlite",
  true: "1",
  false: "0",
  forUpdate: "",
  forShare: "",
  skipLocked: "",
  least: "MIN",
  greatest: "MAX",
};
export const postgresDialect: Dialect = {
  name: "postgres",
  true: "TRUE",
  false: "FALSE",
  forUpdate: " FOR UPDATE",
  forShare: " FOR SHARE",
  skipLocked: " FOR UPDATE SKIP LOCKED",
  least: "LEAST",
  greatest: "GREATEST",
};

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
   * Emits a task event. The operation's events are appended at its end, in one go, with the
   * outbound deliveries they owe (`ops/fan-out.ts`), and announced after COMMIT: PostgreSQL
   * appends them just before COMMIT under the tenant's lock and NOTIFYs them.
   */
  emit(tenantId: string, taskId: string, type: string, data: unknown): void;
  /** Work may have become due: the commit wakes the workers (NOTIFY, or in-process). */
  wake(): void;
  /**
   * Inserts work items and wakes the workers. A dedupe key already held by a pending item
   * keeps one item, due at the earlier time. Per dialect: PostgreSQL inserts a batch in one
   * statement.
   */
  enqueue(items: readonly NewWorkItem[]): Promise<void>;
}

/** A task event emitted by an operation, waiting to be appended at its end. */
export interface PendingEvent {
  tenantId: string;
  taskId: string;
  type: string;
  /** JSON text. */
  data: string;
  createdAt: number;
}

/** A task event once appended, as fan-out and the announcement need it. */
export interface AppendedEvent {
  tenantId: string;
  taskId: string;
  seq: number;
  type: string;
}
