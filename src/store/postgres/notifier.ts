import { EventEmitter } from "node:events";
import type { Client, Notification } from "pg";
import type { AppendedEvent } from "../sql/tx.ts";
import { pg } from "./driver.ts";
import type { PostgresTarget } from "./pool.ts";

const MAX_BACKOFF_MS = 5000;
/** Own events whose NOTIFY has not come back yet; bounded for when it never will (LISTEN down). */
const MAX_PENDING_OWN = 10_000;

/** The newest seq of each given tenant's log. */
export type LatestSeqs = (tenantIds: string[]) => Promise<Map<string, number>>;

/**
 * Wakes this process's listeners: at once for its own commits, and through LISTEN on one
 * dedicated connection for the commits of every other process.
 *
 * The connection opens with the first subscriber. When it drops (a database restart), it
 * reconnects with jittered exponential backoff, LISTENs again, and then calls every work
 * listener once, because work may have been queued while nobody was listening.
 *
 * Work NOTIFYs carry the sending store's id, so a store skips its own (it has already woken
 * its listeners at commit). Task events are passed on once each: this store's own at commit,
 * the others' when their NOTIFY arrives. Own events are noted before COMMIT is sent, so their
 * NOTIFY, which may arrive before COMMIT returns, is recognised and skipped. Events committed
 * elsewhere while LISTEN was down have no NOTIFY to come: on reconnect, each tenant seen so
 * far whose log has grown gets one call with its newest seq, standing for them all.
 */
export class Notifier {
  private readonly emitter = new EventEmitter();
  /** `tenant:seq` of this store's events, until their NOTIFY comes back. */
  private readonly own = new Set<string>();
  /** The newest seq passed on per tenant, to catch up after LISTEN was down. */
  private readonly newest = new Map<string, number>();
  private client: Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private stopped = false;
  private everListened = false;
  private failures = 0;
  /** Whether the LISTEN connection is up. */
  listening = false;

  constructor(
    private readonly target: PostgresTarget,
    private readonly nodeId: string,
    private readonly latestSeqs: LatestSeqs,
  ) {
    this.emitter.setMaxListeners(0);
  }

  onWork(fn: () => void): () => void {
    return this.subscribe("work", fn);
  }
  onTaskEvents(fn: (tenantId: string, seq: number) => void): () => void {
    return this.subscribe("events", fn);
  }
  /** True unless someone subscribed and the LISTEN connection is down. */
  get healthy(): boolean {
    return !this.started || this.listening;
  }

  /** Just before COMMIT: these events are this store's, whatever NOTIFY says later. */
  committing(events: readonly AppendedEvent[]): void {
    for (const e of events) {
      this.own.add(`${e.tenantId}:${e.seq}`);
      if (this.own.size > MAX_PENDING_OWN) this.own.delete(this.own.values().next().value!);
    }
  }

  /** After COMMIT: wakes local listeners without a round trip. */
  committed(work: boolean, events: readonly AppendedEvent[]): void {
    if (work) this.emit("work");
    for (const e of events) this.taskEvent(e.tenantId, e.seq);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const client = this.client;
    this.client = null;
    this.listening = false;
    this.emitter.removeAllListeners();
    if (client) await client.end().catch(() => {});
  }

  private subscribe(event: "work" | "events", fn: (...args: any[]) => void): () => void {
    this.emitter.on(event, fn);
    if (!this.started && !this.stopped) {
      this.started = true;
      void this.connect();
    }
    return () => {
      this.emitter.off(event, fn);
    };
  }

  private async connect(): Promise<void> {
    this.timer = null;
    if (this.stopped) return;
    const client = new (pg().Client)(this.target.client);
    this.client = client;
    client.on("error", () => this.lost(client));
    client.on("end", () => this.lost(client));
    client.on("notification", (n) => this.notified(n));
    try {
      await client.connect();
      const { work, events } = this.target.channels;
      await client.query(`LISTEN "${work}"; LISTEN "${events}"`);
    } catch {
      this.lost(client);
      return;
    }
    if (this.client !== client) return;
    this.listening = true;
    this.failures = 0;
    this.emit("work");
    if (this.everListened) await this.catchUp();
    this.everListened = true;
  }

  private lost(client: Client): void {
    if (this.client !== client) return;
    this.client = null;
    this.listening = false;
    client.end().catch(() => {});
    if (this.stopped) return;
    const delay = Math.min(MAX_BACKOFF_MS, 100 * 2 ** this.failures++) * (0.5 + Math.random() / 2);
    this.timer = setTimeout(() => void this.connect(), delay);
  }

  private notified(n: Notification): void {
    if (n.channel === this.target.channels.work) {
      if (n.payload !== this.nodeId) this.emit("work");
    } else if (n.channel === this.target.channels.events && n.payload) {
      if (this.own.delete(n.payload)) return;
      const at = n.payload.lastIndexOf(":");
      const seq = Number(n.payload.slice(at + 1));
      if (at > 0 && Number.isSafeInteger(seq)) this.taskEvent(n.payload.slice(0, at), seq);
    }
  }

  /** After a reconnect: one call per tenant whose log grew while nobody listened. */
  private async catchUp(): Promise<void> {
    const tenants = [...this.newest.keys()];
    if (tenants.length === 0) return;
    let latest: Map<string, number>;
    try {
      latest = await this.latestSeqs(tenants);
    } catch {
      return; // The database went away again; the next reconnect catches up.
    }
    for (const [tenantId, seq] of latest) {
      if (seq > (this.newest.get(tenantId) ?? 0)) this.taskEvent(tenantId, seq);
    }
  }

  private taskEvent(tenantId: string, seq: number): void {
    if (seq > (this.newest.get(tenantId) ?? 0)) this.newest.set(tenantId, seq);
    this.emit("events", tenantId, seq);
  }

  /** Calls each listener; one that throws neither stops the others nor fails a committed write. */
  private emit(event: "work" | "events", ...args: unknown[]): void {
    for (const fn of this.emitter.listeners(event)) {
      try {
        (fn as (...a: unknown[]) => void)(...args);
      } catch (err) {
        process.emitWarning(`A longhaul ${event} listener threw: ${String(err)}`);
      }
    }
  }
}
