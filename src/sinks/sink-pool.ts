import type { SinkKind } from "../core/sink-kind.ts";
import { openNats } from "./nats-publisher.ts";
import { openRabbitmq } from "./rabbitmq-publisher.ts";
import { openRedis } from "./redis-publisher.ts";
import type { SinkConnection, SinkPublisher } from "./sink-publisher.ts";

/** How long a sink's connection may sit unused before it is closed. */
export const SINK_IDLE_MS = 5 * 60_000;

interface Held {
  key: string;
  publisher: Promise<SinkPublisher>;
  timer: NodeJS.Timeout | undefined;
}

const openers: Record<SinkKind, (c: SinkConnection) => Promise<SinkPublisher>> = {
  nats: openNats,
  rabbitmq: openRabbitmq,
  redis: openRedis,
};

/**
 * One open connection per sink, reused by its deliveries and closed on shutdown. A connection
 * is keyed by the sink and everything it was opened with (address, URL, target), so a sink
 * whose name now resolves elsewhere gets a new one; a broken one is closed and reopened by
 * the next attempt. A connection unused for `idleMs` is closed, so a deleted or quiet sink
 * holds no socket on the broker.
 */
export class SinkPool {
  readonly #open = new Map<string, Held>();

  constructor(private readonly idleMs = SINK_IDLE_MS) {}

  /** How many connections are held (open or opening). */
  get size(): number {
    return this.#open.size;
  }

  async get(sinkId: string, kind: SinkKind, c: SinkConnection): Promise<SinkPublisher> {
    const key = `${kind} ${c.address} ${c.port} ${c.url.href} ${c.target}`;
    const held = this.#open.get(sinkId);
    if (held) {
      if (held.key === key) {
        this.#idle(sinkId, held);
        const p = await held.publisher.catch(() => null);
        if (p?.usable()) return p;
      }
      this.#forget(sinkId, held);
      void held.publisher.then((p) => p.close()).catch(() => {});
    }
    const publisher = openers[kind](c);
    const entry: Held = { key, publisher, timer: undefined };
    this.#open.set(sinkId, entry);
    this.#idle(sinkId, entry);
    // A failed connect is not kept: the next attempt tries again.
    publisher.catch(() => {
      if (this.#open.get(sinkId) === entry) this.#forget(sinkId, entry);
    });
    return publisher;
  }

  /** Drops a sink's connection, after an error it may not survive. */
  async drop(sinkId: string): Promise<void> {
    const held = this.#open.get(sinkId);
    if (!held) return;
    this.#forget(sinkId, held);
    await held.publisher.then((p) => p.close()).catch(() => {});
  }

  /** (Re)starts the entry's idle clock; it does not keep the process alive. */
  #idle(sinkId: string, held: Held): void {
    clearTimeout(held.timer);
    held.timer = setTimeout(() => {
      if (this.#open.get(sinkId) === held) void this.drop(sinkId);
    }, this.idleMs);
    held.timer.unref();
  }

  #forget(sinkId: string, held: Held): void {
    clearTimeout(held.timer);
    if (this.#open.get(sinkId) === held) this.#open.delete(sinkId);
  }

  /** Closes every connection; call it once the deliveries in hand are done (a later one reopens). */
  async close(): Promise<void> {
    const all = [...this.#open.keys()];
    await Promise.all(all.map((id) => this.drop(id)));
  }
}
