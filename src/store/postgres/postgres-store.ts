import { randomUUID } from "node:crypto";
import type { Pool } from "pg";
import { type Clock, systemClock } from "../../core/clock.ts";
import { LonghaulError } from "../../core/errors.ts";
import { type IdGenerator, ulidGenerator } from "../../core/ids.ts";
import { laneOf } from "../../core/work-item.ts";
import { type InboxDbRow, toInbox } from "../rows.ts";
import { type Runner, SqlStore } from "../sql/sql-store.ts";
import type { Lease } from "../store.ts";
import { claim } from "./claim.ts";
import { CompleteBatcher, completeMany } from "./complete-batch.ts";
import { latestSeqs } from "./event-log.ts";
import { migrate, migrationStatus } from "./migrate.ts";
import { Notifier } from "./notifier.ts";
import { createPool, parseTarget } from "./pool.ts";
import { Transactions } from "./transactions.ts";
import { txOf } from "./tx.ts";

export interface PostgresStoreOptions {
  /** `postgres://…`; `?schema=` picks the schema (default `public`). */
  url: string;
  clock?: Clock;
  ids?: IdGenerator;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /** Shown in `pg_stat_activity`; an `application_name` in the URL wins. Default `longhaul`. */
  applicationName?: string;
}

const HEALTH_TIMEOUT_MS = 2000;

/**
 * The store for many processes on many machines (ARCHITECTURE §4.1). Every operation runs whole in
 * one transaction on a pooled connection, with the same semantics as the SQLite store; where
 * SQLite relies on one writer at a time, this one locks what it decides on (see README.md).
 * Work is claimed with `FOR UPDATE SKIP LOCKED`; commits wake workers and SSE streams on
 * every node through LISTEN/NOTIFY. A database that is down surfaces as STORE_UNAVAILABLE
 * (503), and the store recovers by itself when it is back.
 */
export class PostgresStore extends SqlStore {
  readonly schema: string;
  private readonly pool: Pool;
  private readonly tx: Transactions;
  private readonly notifier: Notifier;
  private readonly clock: Clock;
  /** `complete` calls made close together, folded into one statement. */
  private readonly completions = new CompleteBatcher(
    (leases) => this.tx.statement((c) => completeMany(c, leases)),
    { maxInFlight: 2, maxBatch: 500 },
  );

  protected readonly run: Runner = {
    write: (op) => this.tx.write((c) => op(txOf(c))),
    snapshot: (op) => this.tx.snapshot((c) => op(txOf(c))),
    read: (op) => this.tx.read((c) => op(txOf(c))),
  };

  constructor(opts: PostgresStoreOptions) {
    super();
    const target = parseTarget(opts.url, opts.applicationName);
    this.schema = target.schema;
    this.clock = opts.clock ?? systemClock;
    this.pool = createPool(target, opts.poolSize ?? 10);
    const nodeId = randomUUID();
    this.notifier = new Notifier(target, nodeId, (tenantIds) =>
      this.tx.read((c) => latestSeqs(c, tenantIds)),
    );
    this.tx = new Transactions(
      this.pool,
      { clock: this.clock, ids: opts.ids ?? ulidGenerator(this.clock), target, nodeId },
      this.notifier,
    );
  }

  /** Calls `fn` after a commit, on any node, that may have made work due. */
  onWork(fn: () => void): () => void {
    return this.notifier.onWork(fn);
  }
  /**
   * Calls `fn(tenantId, seq)` once per task event appended on any node, after its commit.
   * After the LISTEN connection was down, one call per tenant stands for the events it missed.
   */
  onTaskEvents(fn: (tenantId: string, seq: number) => void): () => void {
    return this.notifier.onTaskEvents(fn);
  }
  /**
   * "degraded" when the database does not answer `SELECT 1` promptly, or LISTEN is down;
   * "full" from a write refused with disk_full until a write commits again. Only a write
   * shows that space is back, so while full each call tries one (see probeWrite).
   */
  async health(): Promise<"ok" | "degraded" | "full"> {
    if (this.tx.storageFull) return this.probeWrite();
    const probe = this.pool.query("SELECT 1");
    probe.catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"degraded">((resolve) => {
      timer = setTimeout(() => resolve("degraded"), HEALTH_TIMEOUT_MS);
    });
    const answer = probe.then(
      () => (this.notifier.healthy ? ("ok" as const) : ("degraded" as const)),
      () => "degraded" as const,
    );
    try {
      return await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async probeWrite(): Promise<"ok" | "degraded" | "full"> {
    // Room for a typical operation, not just a row version on a page with space left: a
    // 64 KiB value that does not compress, written and deleted again.
    const write = this.tx.write(async (c) => {
      await c.sql.run(
        `INSERT INTO meta (key, value)
         SELECT 'storage_probe', string_agg(md5(random()::text), '') FROM generate_series(1, 2048)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      );
      await c.sql.run("DELETE FROM meta WHERE key = 'storage_probe'");
      await c.sql.run(
        `INSERT INTO meta (key, value) VALUES ('storage_probe_at', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
        [String(c.clock.now())],
      );
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"degraded">((resolve) => {
      timer = setTimeout(() => resolve("degraded"), HEALTH_TIMEOUT_MS);
    });
    const answer = write.then(
      () => {
        this.tx.storageFull = false;
        return this.notifier.healthy ? ("ok" as const) : ("degraded" as const);
      },
      (err: unknown) =>
        err instanceof LonghaulError && err.code === "STORAGE_FULL"
          ? ("full" as const)
          : ("degraded" as const),
    );
    try {
      return await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async migrate() {
    return migrate(this.pool, this.schema, this.clock.now());
  }
  async migrationStatus() {
    return migrationStatus(this.pool, this.schema);
  }
  async close() {
    await this.completions.idle();
    await this.notifier.stop();
    await this.pool.end();
  }

  /**
   * One statement, without a transaction around it. Tenants take turns across this process's
   * claims: each starts after the lane the previous one served last.
   */
  async claim(owner: string, limit: number, leaseMs: number) {
    const items = await this.tx.statement((c) => claim(c, owner, limit, leaseMs, this.lastLane));
    const last = items.at(-1);
    if (last) this.lastLane = laneOf(last);
    return items;
  }
  private lastLane: string | null = null;
  /**
   * The lease check, the delete and the wake-up in one statement, on the worker's hot path;
   * completions made close together share it (`CompleteBatcher`), each with its own answer.
   */
  override complete(lease: Lease) {
    return this.completions.complete(lease);
  }
  /** Nothing: other nodes may be alive and holding their leases; expiry hands them back. */
  async releaseOrphanedLeases() {
    return 0;
  }

  /** Every inbox row of the given jobs of one provider, oldest first (a task's timeline). */
  async inboxForJobs(provider: string, externalIds: string[]) {
    if (externalIds.length === 0) return [];
    const rows = await this.tx.read((c) =>
      c.sql.all<InboxDbRow>(
        `SELECT * FROM inbox_events WHERE provider = $1 AND job_external_id = ANY($2::text[])
          ORDER BY received_at, id`,
        [provider, externalIds],
      ),
    );
    return rows.map(toInbox);
  }
}
