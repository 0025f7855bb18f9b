// One longhaul queue consumer in its own process, for bench/queue-pg.ts. It opens its own
// PostgreSQL store on the schema BENCH_QUEUE_URL names, opens its pool's connections, says
// `ready`, and on `start` claims and completes no-op items until the queue is empty. It then
// reports the id of every item it completed, so the parent can check that no item was
// completed twice across processes.
import { openStore } from "../../src/store/open-store.ts";
import { drain } from "./drain.ts";

export type ToWorker = { type: "start" };
export type FromWorker =
  | { type: "ready" }
  | { type: "done"; completed: string[]; seconds: number }
  | { type: "error"; message: string };

/** PostgresStore's default pool size. */
const POOL = 10;

const send = (m: FromWorker) =>
  new Promise<void>((resolve) => {
    if (!process.send) return resolve();
    process.send(m, undefined, {}, () => resolve());
  });

async function main(): Promise<void> {
  const url = process.env.BENCH_QUEUE_URL;
  if (!url || !process.send) throw new Error("bench/queue-pg/worker.ts is started by bench/queue-pg.ts");
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
  const owner = process.env.BENCH_OWNER ?? `bench-worker-${process.pid}`;
  const store = await openStore(url);
  // Open the pool's connections now, so that connecting is not part of the measured drain.
  await Promise.all(Array.from({ length: POOL }, () => store.health()));
  const started = new Promise<void>((resolve) => {
    process.on("message", (m: ToWorker) => {
      if (m.type === "start") resolve();
    });
  });
  await send({ type: "ready" });
  await started;
  const t0 = performance.now();
  const completed = await drain(store, { owner, concurrency, leaseMs: 30_000 });
  const seconds = (performance.now() - t0) / 1000;
  await send({ type: "done", completed, seconds });
  await store.close();
  process.disconnect();
}

// The parent going away ends this process too.
process.on("disconnect", () => process.exit(0));
main().catch(async (err: unknown) => {
  await send({ type: "error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
});
