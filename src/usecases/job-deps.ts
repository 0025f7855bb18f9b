import type { Clock } from "../core/clock.ts";
import type { ProviderLookup } from "../providers/provider.ts";
import type { JobStore, QueueStore } from "../store/store.ts";

/** What the use cases that call a job's provider (dispatch, poll, cancel) need. */
export interface JobWorkDeps {
  store: JobStore & QueueStore;
  clock: Clock;
  providers: ProviderLookup;
  /** The random source of retry jitter; default `Math.random`. Injected so tests are exact. */
  random?: (() => number) | undefined;
}
