import { sqliteDialect, type Tx } from "../sql/tx.ts";
import type { Ctx } from "./db.ts";
import { emit } from "./event-log.ts";
import { assertLease, complete, enqueue, fail } from "./queue-ops.ts";

/**
 * The shared operations' view of SQLite's connection. Every call runs synchronously and
 * resolves at once, so an operation awaiting only its Tx runs whole inside its savepoint of
 * the group commit's transaction, with nothing of another operation in between.
 */
export function sqliteTx(c: Ctx): Tx {
  return {
    d: sqliteDialect,
    clock: c.clock,
    ids: c.ids,
    all: async (text, params = []) => c.sql.all(text, ...params),
    get: async (text, params = []) => c.sql.get(text, ...params),
    run: async (text, params = []) => c.sql.run(text, ...params).changes,
    bool: (v) => (v ? 1 : 0),
    // The one writer already runs operations one at a time.
    lock: async () => {},
    emit: (tenantId, taskId, type, data) => emit(c, tenantId, taskId, type, data),
    wake: () => {
      c.wake = true;
    },
    queue: {
      assertLease: async (lease) => assertLease(c, lease),
      enqueue: async (items) => enqueue(c, items),
      complete: async (lease) => complete(c, lease),
      fail: async (lease, error, retryAt) => fail(c, lease, error, retryAt),
    },
  };
}
