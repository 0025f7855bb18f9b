import { closeSync, fdatasync, fdatasyncSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import type Database from "better-sqlite3";
import { type Clock, systemClock } from "../../core/clock.ts";
import { LonghaulError } from "../../core/errors.ts";
import { type IdGenerator, ulidGenerator } from "../../core/ids.ts";
import { laneOf } from "../../core/work-item.ts";
import { beginAdvance } from "../ops/advance-ops.ts";
import { fanOut } from "../ops/fan-out.ts";
import { recoverExpiredLeases } from "../ops/queue-ops.ts";
import { type InboxDbRow, toInbox } from "../rows.ts";
import { type Runner, SqlStore } from "../sql/sql-store.ts";
import type { AppendedEvent, Tx } from "../sql/tx.ts";
import type { InboxEventRow, Lease } from "../store.ts";
import { CompleteFold, claim, completeMany } from "./claim.ts";
import { openDatabase, Sql } from "./db.ts";
import { appendTaskEvents } from "./event-log.ts";
import { GroupCommit } from "./group-commit.ts";
import { migrate, migrationStatus } from "./migrate.ts";
import { LocalNotifier } from "./notifier.ts";
import { type Effects, sqliteTx } from "./tx.ts";

export interface SqliteStoreOptions {
  /** A file path, or `:memory:` for throwaway tests. */
  path: string;
  clock?: Clock;
  ids?: IdGenerator;
  /**
   * Sync the WAL on the event loop, instead of on the thread pool, when no other write could
   * run meanwhile (default false). It saves a hop to the thread pool and back, but blocks the
   * loop for the whole sync (milliseconds): only for a process whose loop serves nothing else,
   * a worker node (`serve --role worker`). A process that answers HTTP keeps it off, or every
   * request waits behind the syncs of its neighbours' writes.
   */
  syncInPlace?: boolean;
}

/**
 * The embedded store. One process owns the file. Reads run at once on the connection, those
 * of one turn of the loop in one read transaction;
 * writes go through group commit, so the writes of one tick share one transaction and one
 * fsync. Every write operation runs whole inside its own savepoint.
 */
export class SqliteStore extends SqlStore {
  /**
   * The connection. A statement run on it directly shares it with the store: within a turn of
   * the loop in which the store has read, a read transaction may be open until the turn ends
   * (`db.inTransaction`), so a `BEGIN` or a checkpoint waits for the next turn.
   */
  readonly db: Database.Database;
  private readonly sql: Sql;
  private readonly clock: Clock;
  /** What the running write leaves for its commit; operations run one at a time. */
  private readonly effects: Effects = { events: [], work: false };
  /** The shared operations' view of the connection. */
  private readonly tx: Tx;
  private readonly writer: GroupCommit;
  private readonly notifier = new LocalNotifier();
  /** Set when a write failed for lack of disk space; cleared once a probe write commits. */
  private storageFull = false;
  /** A file's WAL, which the group commit syncs after each COMMIT. */
  private wal: { path: string; fd: number | null } | null = null;
  /**
   * The time of the running write: taken when the write was submitted, and the same for every
   * read of the clock inside it (as PostgreSQL's `now()` is the transaction's). Null between writes.
   */
  private writeTime: number | null = null;
  /** A read transaction is open for this turn's reads (see `closeRead`). */
  private reading = false;
  private readonly beginRead: Database.Statement;
  private readonly endRead: Database.Statement;
  private readonly completes = new CompleteFold(
    () => this.writer.last(),
    (leases) => this.completeMany(leases),
  );

  protected readonly run: Runner = {
    write: (op) => this.write(op),
    snapshot: (op) => this.read(op),
    read: (op) => this.read(op),
  };

  constructor(opts: SqliteStoreOptions) {
    super();
    if (opts.path !== ":memory:") mkdirSync(dirname(opts.path), { recursive: true });
    this.db = openDatabase(opts.path);
    const clock = opts.clock ?? systemClock;
    this.clock = clock;
    this.sql = new Sql(this.db);
    const txClock: Clock = { now: () => this.writeTime ?? clock.now() };
    this.tx = sqliteTx(this.sql, txClock, opts.ids ?? ulidGenerator(txClock), this.effects);
    // A file's WAL is synced by the group commit after COMMIT, pipelined with the next batch;
    // SQLite still syncs around checkpoints itself (synchronous=NORMAL). Every write is
    // answered only once the WAL holding it is on disk, as with synchronous=FULL. The sync
    // runs on the thread pool, so the loop serves requests meanwhile, unless `syncInPlace`.
    this.beginRead = this.db.prepare("BEGIN DEFERRED");
    this.endRead = this.db.prepare("COMMIT");
    const beforeBegin = () => this.closeRead();
    if (opts.path === ":memory:") {
      this.writer = new GroupCommit(this.db, 512, { beforeBegin });
    } else {
      this.db.pragma("synchronous = NORMAL");
      this.wal = { path: `${opts.path}-wal`, fd: null };
      this.writer = new GroupCommit(this.db, 512, {
        beforeBegin,
        syncWal: () => this.syncWal(),
        syncWalNow: opts.syncInPlace ? () => fdatasyncSync(this.walFd()) : undefined,
        mayWait: () => !this.notifier.listensForWork(),
      });
    }
  }

  /**
   * A write in its savepoint of the group commit's transaction. Work it made due is signalled
   * at COMMIT: the worker's claim, a later write, sees it committed (and any durable write
   * made from it syncs it first). Its task events are appended at its end, with the
   * deliveries they owe, and announced once durable: when the write is answered, or for one
   * answered at COMMIT (`atCommit`), after the WAL's sync that covers it.
   */
  private write<T>(op: (tx: Tx) => Promise<T>, opts: { atCommit?: boolean } = {}): Promise<T> {
    let appended: AppendedEvent[] = [];
    let work = false;
    const at = this.clock.now();
    const announce = () => {
      for (const e of appended) this.notifier.announce(e.tenantId, e.seq);
    };
    const committed = () => work && this.notifier.wake();
    return this.writer
      .run(
        async () => {
          // An operation that throws is rolled back and never reaches the lines below.
          this.effects.events = [];
          this.effects.work = false;
          this.writeTime = at;
          try {
            const v = await op(this.tx);
            appended = appendTaskEvents(this.sql, this.effects.events);
            await fanOut(this.tx, appended);
            work = this.effects.work;
            if (opts.atCommit && appended.length > 0) this.writer.whenDurable((err) => err || announce());
            return v;
          } finally {
            this.writeTime = null;
          }
        },
        { atCommit: opts.atCommit === true, committed },
      )
      .then((v) => {
        if (!opts.atCommit) announce();
        return v;
      })
      .catch((err: unknown) => {
        if (err instanceof LonghaulError && err.code === "STORAGE_FULL") this.storageFull = true;
        throw err;
      });
  }

  /**
   * A read on the connection, once no group-commit batch is open: operations of a batch are
   * awaited one by one, and a read run in between would see writes not yet committed.
   */
  private async read<T>(op: (tx: Tx) => Promise<T>): Promise<T> {
    const open = this.writer.settled();
    if (open) await open;
    if (!this.reading && !this.db.inTransaction) {
      this.beginRead.run();
      this.reading = true;
      setImmediate(this.closeRead);
    }
    return op(this.tx);
  }

  /**
   * Ends the read transaction the reads of this turn share, if one is open: at the turn's end,
   * or before a write batch begins. In WAL mode each transaction takes and drops a lock on the
   * `-shm` file (system calls: ~8 µs here, against ~1 µs for the statement itself), so reads
   * issued together (a worker's batch of handlers, a task's detail) share one.
   */
  private readonly closeRead = (): void => {
    if (!this.reading) return;
    this.reading = false;
    if (this.db.inTransaction) this.endRead.run();
  };

  /** Write transactions committed so far (group commit folds a tick's writes into one). */
  get commits(): number {
    return this.writer.commits;
  }

  /** Calls `fn` after a commit that may have made work due. */
  onWork(fn: () => void): () => void {
    return this.notifier.onWork(fn);
  }

  onTaskEvents(fn: (tenantId: string, seq: number) => void): () => void {
    return this.notifier.onTaskEvents(fn);
  }

  /**
   * "full" from the first write refused for lack of disk space until a write commits again.
   * Only a write shows that space is back, so while full each call tries one that needs room
   * for a typical operation (a 64 KiB row, deleted again), not just a page rewritten in place.
   */
  async health(): Promise<"ok" | "degraded" | "full"> {
    if (!this.db.open) return "degraded";
    if (!this.storageFull) return "ok";
    try {
      await this.write(async (tx) => {
        await tx.run(
          "INSERT INTO meta (key, value) VALUES ('storage_probe', hex(randomblob(32768))) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        );
        await tx.run("DELETE FROM meta WHERE key = 'storage_probe'");
        await tx.run(
          "INSERT INTO meta (key, value) VALUES ('storage_probe_at', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
          [String(tx.clock.now())],
        );
      });
      this.storageFull = false;
      return "ok";
    } catch {
      return this.storageFull ? "full" : "degraded";
    }
  }
  async migrate() {
    return migrate(this.db, this.clock.now());
  }
  async migrationStatus() {
    return migrationStatus(this.db);
  }
  async close() {
    await this.writer.run(() => undefined);
    if (this.wal?.fd != null) closeSync(this.wal.fd);
    this.db.close();
  }

  /** The WAL's committed frames onto the disk (as SQLite's own sync at COMMIT would). */
  private syncWal(): Promise<void> {
    const fd = this.walFd();
    return new Promise((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
  }
  private walFd(): number {
    const wal = this.wal!;
    // The WAL exists from the first COMMIT on, which comes before the first sync.
    wal.fd ??= openSync(wal.path, "r");
    return wal.fd;
  }

  /**
   * Claims run as writes: the one writer takes items with plain reads and updates. A claim is
   * answered at COMMIT, before the WAL's sync: one lost to a power cut only leaves its items
   * pending, as every lease is handed back at start anyway (`releaseOrphanedLeases`), and
   * any write made under it syncs the claim first.
   */
  claim(owner: string, limit: number, leaseMs: number) {
    // Read on the first run: a batch run again (GroupCommit) starts from the same lane.
    let after: { lane: string | null } | undefined;
    return this.write(
      async (tx) => {
        after ??= { lane: this.lastLane };
        const items = claim(this.sql, tx.clock.now(), owner, limit, leaseMs, after.lane);
        const last = items.at(-1);
        if (last) this.lastLane = laneOf(last);
        return items;
      },
      { atCommit: true },
    );
  }
  /** The lane the last claim served last: the next claim starts after it (tenants take turns). */
  private lastLane: string | null = null;
  /**
   * Answered at COMMIT, as a claim is, so the task's function starts while the WAL syncs; its
   * `task.running` is announced only after that sync. One lost to a power cut leaves the task
   * as it was and its item leased, handed back at start: the advance runs again, and every
   * write the run makes under the lease (its steps, its end) syncs the begin first.
   */
  override beginAdvance(lease: Lease, taskId: string) {
    return this.write((tx) => beginAdvance(tx, lease, taskId), { atCommit: true });
  }
  /**
   * Completes the item of `lease` (LEASE_LOST unless the lease still holds it). Calls made one
   * after another fold into one operation (`CompleteFold`): one savepoint and one DELETE for
   * all (`completeMany`), as PostgreSQL folds them into one statement.
   */
  override complete(lease: Lease): Promise<void> {
    return this.completes.complete(lease);
  }
  /**
   * Completes many leases in one write; answers, lease by lease, whether it held its item.
   * Answered at COMMIT, as a claim is. What a handler records ends its item in that same
   * write, answered once durable; a bare `complete` ends an item with nothing (more) to record,
   * after at most an effect that is safe to repeat (a cancel asked of a provider, a prune), as
   * every handler is run at least once anyway. One lost to a power cut leaves its item leased,
   * handed back at start, and the handler runs again; any durable write after it syncs it first.
   */
  completeMany(leases: Lease[]): Promise<boolean[]> {
    return this.write((tx) => completeMany(tx, leases), { atCommit: true });
  }
  /** One process owns the file: leases left by an earlier process are orphans, handed back now. */
  releaseOrphanedLeases() {
    return this.write(async (tx) => {
      await tx.run("UPDATE work_items SET lease_expires_at = ? WHERE status = 'leased'", [tx.clock.now()]);
      return recoverExpiredLeases(tx);
    });
  }

  inboxForJobs(provider: string, externalIds: string[]) {
    return this.read((tx) => inboxForJobs(tx, provider, externalIds));
  }
}

/** One statement for any number of ids; the IN over json_each still probes inbox_by_job. */
export async function inboxForJobs(
  tx: Tx,
  provider: string,
  externalIds: string[],
): Promise<InboxEventRow[]> {
  if (externalIds.length === 0) return [];
  const rows = await tx.all<InboxDbRow>(
    `SELECT * FROM inbox_events
      WHERE provider = ? AND job_external_id IN (SELECT value FROM json_each(?))
      ORDER BY received_at, id`,
    [provider, JSON.stringify(externalIds)],
  );
  return rows.map(toInbox);
}
