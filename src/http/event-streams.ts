import type { ServerResponse } from "node:http";
import type { Logger } from "pino";
import { LonghaulError } from "../core/errors.ts";
import type { EventLogStore, TaskEventRow } from "../store/store.ts";

export interface EventStreamsOptions {
  /** How often an idle stream gets a `: ping` comment. Default 15 s. */
  heartbeatMs?: number;
  /** Events read from the log per step. Default 100. */
  pageSize?: number;
  /** A page stops growing past this many bytes (events are never split). Default 256 KiB. */
  pageBytes?: number;
  /** Open streams one tenant may hold on this node (`limits.sse_streams_per_tenant`); 0: no cap. Default 0. */
  maxPerTenant?: number;
}

/** When a refused stream should try again: streams end only when their clients go, so soon is fine. */
const FULL_RETRY_AFTER_S = 5;

/** A page of the log, framed once and written to every stream that is at the same place. */
interface Page {
  text: string;
  count: number;
  lastSeq: number;
  /** The log may hold more right after this page. */
  more: boolean;
}

export interface EventStreamStats {
  streams: number;
  /** Bytes waiting in user space across all streams now. */
  bufferedBytes: number;
  /** The most bytes one stream ever had waiting in user space. */
  peakBufferedBytes: number;
}

/** The SSE frame of one task event: `id` is the log's seq, so `Last-Event-ID` resumes from it. */
export function sseFrame(e: TaskEventRow): string {
  const data = JSON.stringify({
    seq: e.seq,
    task_id: e.taskId,
    type: e.type,
    data: e.data,
    created_at: new Date(e.createdAt).toISOString(),
  });
  return `id: ${e.seq}\nevent: ${e.type}\ndata: ${data}\n\n`;
}

/**
 * The open SSE streams of this node (ARCHITECTURE §4.7), fed from the durable task event log.
 *
 * Pull, not push: a stream holds only the last seq it wrote. A commit wakes the streams of
 * its tenant; each reads the next page after its own seq and writes it, and when the socket
 * pushes back (`write` returns false) it stops until `drain`. So a reader that stalls costs
 * at most one page in memory, a reconnect with `Last-Event-ID` is the same read from an
 * older seq, and nothing can fall between replay and live. Streams at the same place share
 * one read and one framing of each page.
 */
export class EventStreams {
  private readonly pageSize: number;
  private readonly pageBytes: number;
  private readonly maxPerTenant: number;
  private readonly byTenant = new Map<string, Set<EventStream>>();
  private readonly pages = new Map<string, Promise<Page>>();
  private readonly dirty = new Set<string>();
  private flushQueued = false;
  /** Bumped per wake-up so that a page read before a commit is never served after it. */
  private generation = 0;
  private peakBuffered = 0;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly store: EventLogStore,
    readonly log: Logger,
    opts: EventStreamsOptions = {},
  ) {
    this.pageSize = opts.pageSize ?? 100;
    this.pageBytes = opts.pageBytes ?? 256 * 1024;
    this.maxPerTenant = opts.maxPerTenant ?? 0;
    this.unsubscribe = store.onTaskEvents((tenantId) => this.notified(tenantId));
    this.heartbeat = setInterval(() => this.ping(), opts.heartbeatMs ?? 15_000);
    this.heartbeat.unref();
  }

  /**
   * Refuses a new stream of a tenant that already holds its cap on this node (429
   * `TOO_MANY_STREAMS`). Call it in the same tick as `open`, so no other stream slips in
   * between; a slot frees as soon as one of the tenant's streams closes.
   */
  admit(tenantId: string): void {
    if (this.maxPerTenant === 0) return;
    const open = this.byTenant.get(tenantId)?.size ?? 0;
    if (open < this.maxPerTenant) return;
    throw new LonghaulError(
      "TOO_MANY_STREAMS",
      `This tenant already has ${open} event streams open on this server, its limit; close one (or follow several tasks on one stream without task_id) and retry.`,
      { details: { retry_after_s: FULL_RETRY_AFTER_S } },
    );
  }

  /** Starts streaming the tenant's events after `afterSeq` (only `taskId`'s, if given) to `res`. */
  open(res: ServerResponse, tenantId: string, taskId: string | null, afterSeq: number): void {
    const stream = new EventStream(this, res, tenantId, taskId, afterSeq);
    let set = this.byTenant.get(tenantId);
    if (!set) {
      set = new Set();
      this.byTenant.set(tenantId, set);
    }
    set.add(stream);
    res.on("close", () => this.remove(stream));
    stream.wake();
  }

  stats(): EventStreamStats {
    let streams = 0;
    let bufferedBytes = 0;
    for (const set of this.byTenant.values()) {
      for (const s of set) {
        streams++;
        bufferedBytes += s.res.writableLength;
      }
    }
    return { streams, bufferedBytes, peakBufferedBytes: this.peakBuffered };
  }

  /** Ends every stream (the server is closing; clients reconnect elsewhere with their last id). */
  close(): void {
    this.unsubscribe();
    clearInterval(this.heartbeat);
    for (const set of [...this.byTenant.values()]) for (const s of [...set]) s.end();
    this.byTenant.clear();
  }

  /** @internal */
  page(tenantId: string, taskId: string | null, afterSeq: number): Promise<Page> {
    const key = `${this.generation}|${tenantId}|${taskId ?? ""}|${afterSeq}`;
    let p = this.pages.get(key);
    if (!p) {
      p = this.store
        .taskEvents(tenantId, afterSeq, this.pageSize, taskId ?? undefined)
        .then((rows) => this.frame(rows, afterSeq));
      this.pages.set(key, p);
      const forget = () => this.pages.delete(key);
      p.then(forget, forget);
    }
    return p;
  }

  private frame(rows: TaskEventRow[], afterSeq: number): Page {
    let text = "";
    let count = 0;
    let lastSeq = afterSeq;
    for (const row of rows) {
      if (count > 0 && text.length >= this.pageBytes) break;
      text += sseFrame(row);
      count++;
      lastSeq = row.seq;
    }
    return { text, count, lastSeq, more: count < rows.length || rows.length === this.pageSize };
  }

  /** @internal */
  sawBuffered(bytes: number): void {
    if (bytes > this.peakBuffered) this.peakBuffered = bytes;
  }

  private notified(tenantId: string): void {
    if (!this.byTenant.has(tenantId)) return;
    this.dirty.add(tenantId);
    if (this.flushQueued) return;
    this.flushQueued = true;
    // One wake-up per tenant for all the events of a commit, after the last of them is announced.
    queueMicrotask(() => {
      this.flushQueued = false;
      this.generation++;
      for (const t of this.dirty) for (const s of this.byTenant.get(t) ?? []) s.wake();
      this.dirty.clear();
    });
  }

  private ping(): void {
    for (const set of this.byTenant.values()) for (const s of set) s.ping();
  }

  private remove(stream: EventStream): void {
    stream.closed = true;
    const set = this.byTenant.get(stream.tenantId);
    if (!set) return;
    set.delete(stream);
    if (set.size === 0) this.byTenant.delete(stream.tenantId);
  }
}

class EventStream {
  closed = false;
  private reading = false;
  private again = false;
  private blocked = false;

  constructor(
    private readonly hub: EventStreams,
    readonly res: ServerResponse,
    readonly tenantId: string,
    private readonly taskId: string | null,
    private lastSeq: number,
  ) {}

  wake(): void {
    if (this.closed || this.blocked) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    void this.pump();
  }

  ping(): void {
    if (this.closed || this.blocked || this.reading) return;
    if (!this.res.write(": ping\n\n")) this.block();
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.res.end();
  }

  private async pump(): Promise<void> {
    this.reading = true;
    try {
      do {
        this.again = false;
        const page = await this.hub.page(this.tenantId, this.taskId, this.lastSeq);
        if (this.closed) return;
        if (page.count === 0) continue;
        this.lastSeq = page.lastSeq;
        const flowing = this.res.write(page.text);
        this.hub.sawBuffered(this.res.writableLength);
        if (!flowing) return this.block();
        if (page.more) this.again = true;
      } while (this.again);
    } catch (err) {
      this.hub.log.warn({ err, tenantId: this.tenantId }, "event stream read failed; closing it");
      this.end();
    } finally {
      this.reading = false;
    }
  }

  private block(): void {
    this.blocked = true;
    this.res.once("drain", () => {
      this.blocked = false;
      this.wake();
    });
  }
}

declare module "fastify" {
  interface FastifyInstance {
    /** The SSE streams of this server, for their stats. */
    eventStreams: EventStreams;
  }
}
