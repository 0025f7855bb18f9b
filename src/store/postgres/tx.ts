import { json } from "../json.ts";
import type { Tx } from "../sql/tx.ts";
import { postgresDialect } from "../sql/tx.ts";
import { advisoryLock, type Ctx } from "./db.ts";
import { enqueue } from "./queue-ops.ts";

const rewritten = new Map<string, string>();

/** `text` with its `?` placeholders numbered `$1`, `$2`, …; string literals are left alone. */
export function positional(text: string): string {
  let out = rewritten.get(text);
  if (out === undefined) {
    let n = 0;
    let quoted = false;
    out = "";
    for (const ch of text) {
      if (ch === "'") quoted = !quoted;
      out += ch === "?" && !quoted ? `$${++n}` : ch;
    }
    rewritten.set(text, out);
  }
  return out;
}

const txs = new WeakMap<Ctx, Tx>();

/** The shared operations' view of a PostgreSQL operation's connection and effects. */
export function txOf(c: Ctx): Tx {
  let tx = txs.get(c);
  if (!tx) {
    tx = {
      d: postgresDialect,
      clock: c.clock,
      ids: c.ids,
      all: (text, params = []) => c.sql.all(positional(text), params),
      get: (text, params = []) => c.sql.get(positional(text), params),
      run: (text, params = []) => c.sql.run(positional(text), params),
      bool: (v) => v,
      lock: (key) => advisoryLock(c, key),
      // Appended at the end of the transaction (./event-log.ts appendTaskEvents).
      emit: (tenantId, taskId, type, data) => {
        c.effects.events.push({ tenantId, taskId, type, data: json(data), createdAt: c.clock.now() });
      },
      wake: () => {
        c.effects.work = true;
      },
      enqueue: (items) => enqueue(c, items),
    };
    txs.set(c, tx);
  }
  return tx;
}
