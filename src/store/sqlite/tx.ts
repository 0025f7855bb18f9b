import type { Clock } from "../../core/clock.ts";
import type { IdGenerator } from "../../core/ids.ts";
import { json } from "../json.ts";
import type { PendingEvent, Tx } from "../sql/tx.ts";
import { sqliteDialect } from "../sql/tx.ts";
import { enqueue } from "./claim.ts";
import type { Sql } from "./db.ts";

/** What the running write leaves for its commit: task events to append and announce, a wake-up. */
export interface Effects {
  events: PendingEvent[];
  work: boolean;
}

/**
 * The shared operations' view of SQLite's connection. Every call runs synchronously and
 * resolves at once, so an operation awaiting only its Tx runs whole inside its savepoint of
 * the group commit's transaction, with nothing of another operation in between. The one
 * writer runs operations one at a time, so `effects` is the running operation's alone.
 */
export function sqliteTx(sql: Sql, clock: Clock, ids: IdGenerator, effects: Effects): Tx {
  const tx: Tx = {
    d: sqliteDialect,
    clock,
    ids,
    all: async (text, params = []) => sql.all(text, ...params),
    get: async (text, params = []) => sql.get(text, ...params),
    run: async (text, params = []) => sql.run(text, ...params).changes,
    bool: (v) => (v ? 1 : 0),
    // The one writer already runs operations one at a time.
    lock: async () => {},
    emit: (tenantId, taskId, type, data) => {
      effects.events.push({ tenantId, taskId, type, data: json(data), createdAt: clock.now() });
    },
    wake: () => {
      effects.work = true;
    },
    enqueue: async (items) => {
      if (items.length === 0) return;
      enqueue(sql, clock.now(), items);
      effects.work = true;
    },
  };
  return tx;
}
