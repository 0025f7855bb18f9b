import { createHash } from "node:crypto";
import type { PoolClient, QueryResultRow } from "pg";
import type { Clock } from "../../core/clock.ts";
import type { IdGenerator } from "../../core/ids.ts";
import type { PendingEvent } from "../sql/tx.ts";

const names = new Map<string, string>();

/** A stable name per SQL text, so each connection parses and plans a statement once. */
function statementName(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `lh_${createHash("sha1").update(text).digest("hex").slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
}

/** Parameterized, named (prepared) statements on one connection. */
export class Sql {
  constructor(private readonly client: PoolClient) {}

  async all<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    const r = await this.client.query<T & QueryResultRow>({
      name: statementName(text),
      text,
      values: [...params],
    });
    return r.rows;
  }
  /**
   * Runs a statement unprepared, so the server plans it for these parameters and the table as
   * it is now. For a hot statement whose right plan depends on the queue's size: a connection
   * keeps one generic plan for a named statement, and one made while the queue was nearly
   * empty may scan every leased row (a bitmap over `work_leases`) instead of probing ids,
   * which grows with every finished item until VACUUM.
   */
  async allReplanned<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    const r = await this.client.query<T & QueryResultRow>(text, [...params]);
    return r.rows;
  }
  async get<T>(text: string, params: readonly unknown[] = []): Promise<T | undefined> {
    return (await this.all<T>(text, params))[0];
  }
  /** Runs a statement and returns how many rows it changed. */
  async run(text: string, params: readonly unknown[] = []): Promise<number> {
    const r = await this.client.query({ name: statementName(text), text, values: [...params] });
    return r.rowCount ?? 0;
  }
}

/** What an operation leaves for its commit to announce. */
export interface Effects {
  /** Work may have become due: NOTIFY the work channel. */
  work: boolean;
  events: PendingEvent[];
}

/** What every PostgreSQL operation runs with: one connection inside one transaction. */
export interface Ctx {
  sql: Sql;
  clock: Clock;
  ids: IdGenerator;
  schema: string;
  /** The work channel and this store's payload on it, for a statement that NOTIFYs by itself. */
  wake: { channel: string; payload: string };
  effects: Effects;
}

/**
 * Takes a transaction-scoped advisory lock on `name` (within this schema), released at
 * COMMIT or ROLLBACK. Used where two transactions must not both read before either writes.
 */
export async function advisoryLock(c: Ctx, name: string): Promise<void> {
  await c.sql.run("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`${c.schema}:${name}`]);
}
