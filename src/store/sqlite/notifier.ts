import { EventEmitter } from "node:events";

/**
 * SQLite's notifications, within one process: "work may be due" and "a task event was
 * appended", both raised after COMMIT. A listener's failure is a warning: the write it
 * announces has committed and must not turn into a rejection.
 */
export class LocalNotifier {
  private readonly work = new EventEmitter();
  private readonly taskEventListeners = new Set<(tenantId: string, seq: number) => void>();

  constructor() {
    this.work.setMaxListeners(0);
  }

  /** Calls `fn` after a commit that may have made work due. */
  onWork(fn: () => void): () => void {
    this.work.on("work", fn);
    return () => this.work.off("work", fn);
  }

  onTaskEvents(fn: (tenantId: string, seq: number) => void): () => void {
    this.taskEventListeners.add(fn);
    return () => this.taskEventListeners.delete(fn);
  }

  /** True when a worker of this process listens: it would act on a commit before its sync. */
  listensForWork(): boolean {
    return this.work.listenerCount("work") > 0;
  }

  /** True when someone was listening (a worker of this process). */
  wake(): boolean {
    return this.work.emit("work");
  }

  announce(tenantId: string, seq: number): void {
    for (const fn of this.taskEventListeners) {
      try {
        fn(tenantId, seq);
      } catch (err) {
        process.emitWarning(`task event listener failed: ${(err as Error).message}`);
      }
    }
  }
}
