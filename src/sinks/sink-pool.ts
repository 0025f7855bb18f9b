import type { SinkKind } from "../core/sink-kind.ts";
import { openNats } from "./nats-publisher.ts";
import { openRabbitmq } from "./rabbitmq-publisher.ts";
import { openRedis } from "./redis-publisher.ts";
import type { SinkConnection, SinkPublisher } from "./sink-publisher.ts";

const openers: Record<SinkKind, (c: SinkConnection) => Promise<SinkPublisher>> = {
  nats: openNats,
  rabbitmq: openRabbitmq,
  redis: openRedis,
};

/**
 * One open connection per sink, reused by its deliveries and closed on shutdown. A connection
 * is keyed by the sink and everything it was opened with (address, URL, target), so a sink
 * whose name now resolves elsewhere gets a new one; a broken one is closed and reopened by
 * the next attempt.
 */
export class SinkPool {
  readonly #open = new Map<string, { key: string; publisher: Promise<SinkPublisher> }>();

  async get(sinkId: string, kind: SinkKind, c: SinkConnection): Promise<SinkPublisher> {
    const key = `${kind} ${c.address} ${c.port} ${c.url.href} ${c.target}`;
    const held = this.#open.get(sinkId);
    if (held) {
      if (held.key === key) {
        const p = await held.publisher.catch(() => null);
        if (p?.usable()) return p;
      }
      this.#open.delete(sinkId);
      void held.publisher.then((p) => p.close()).catch(() => {});
    }
    const publisher = openers[kind](c);
    this.#open.set(sinkId, { key, publisher });
    // A failed connect is not kept: the next attempt tries again.
    publisher.catch(() => {
      if (this.#open.get(sinkId)?.publisher === publisher) this.#open.delete(sinkId);
    });
    return publisher;
  }

  /** Drops a sink's connection, after an error it may not survive. */
  async drop(sinkId: string): Promise<void> {
    const held = this.#open.get(sinkId);
    if (!held) return;
    this.#open.delete(sinkId);
    await held.publisher.then((p) => p.close()).catch(() => {});
  }

  /** Closes every connection; call it once the deliveries in hand are done (a later one reopens). */
  async close(): Promise<void> {
    const all = [...this.#open.keys()];
    await Promise.all(all.map((id) => this.drop(id)));
  }
}
