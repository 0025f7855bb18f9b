// `import { ManualClock, openTestStore, startSimulator } from "longhaul/testing"`: what tests of
// an application's task types need (ARCHITECTURE §5): time that moves only when told, a store
// that lives in memory, and the provider simulator that sends signed webhooks.
import type { Clock } from "./core/clock.ts";
import type { IdGenerator } from "./core/ids.ts";
import { SqliteStore } from "./store/sqlite/sqlite-store.ts";

export { type Clock, ManualClock } from "./core/clock.ts";
export type { ChaosOptions } from "./providers/sim/chaos.ts";
export { type SimProviderOptions, simProvider } from "./providers/sim/sim-provider.ts";
export { type Simulator, type SimulatorOptions, startSimulator } from "./providers/sim/simulator.ts";

/**
 * A migrated SQLite store for a test: in memory unless `path` names a file (then a restart on
 * the same file sees the same tasks). Share `clock` with `createLonghaul` to drive time.
 * Close it with `store.close()`, or let `app.close()` do it.
 */
export async function openTestStore(
  opts: { path?: string; clock?: Clock; ids?: IdGenerator } = {},
): Promise<SqliteStore> {
  const store = new SqliteStore({
    path: opts.path ?? ":memory:",
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.ids ? { ids: opts.ids } : {}),
  });
  await store.migrate();
  return store;
}
