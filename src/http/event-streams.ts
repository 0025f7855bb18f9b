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

/** A page of the log, framed once into one buffer that is written to every stream it is for. */
export interface Page {
  rows: TaskEventRow[];
  /** The TaskEvent JSON of each row, serialized once: a WebSocket message, an SSE frame's data. */
  data: string[];
  /** The SSE frames of `rows`, back to back. */
  bytes: Buffer;
  /** Where the frame of `rows[i]` starts in `bytes`; `ends[i]` where it ends. */
  starts: number[];
  ends: number[];
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

/** One task event as the wire's TaskEvent JSON: a WebSocket message, an SSE frame's `data`. */
export function eventJson(e: TaskEventRow): string {
  return JSON.stringify({
    seq: e.seq,
    task_id: e.taskId,
    type: e.type,
    data: e.data,
    created_at: new Date(e.createdAt).toISOString(),
  });
}

/** The SSE frame of one task event: `id` is the log's seq, so `Last-Event-ID` resumes from it. */
export function sseFrame(e: TaskEventRow, data = eventJson(e)): string {
  return `id: ${e.seq}\nevent: ${e.type}\ndata: ${data}\n\n`;
}

/**
 * Where one stream's events go, whatever carries them (./stream-sinks.ts: an SSE response, a
 * WebSocket). The fan-out, the replay from the log and the handling of slow readers are the
 * hub's and the same for every transport; a sink only writes and reports push-back.
 */
export interface StreamSink {
  /** Writes the events `from` to `to` (exclusive) of `page`; false once the transport pushed back. */
  write(page: Page, from: number, to: number): boolean;
  /** A heartbeat for an idle stream; false once the transport pushed back. */
  ping(): boolean;
  /** Bytes waiting in user space. */
  readonly bufferedBytes: number;
  /** Calls `fn` once, when what was waiting has been written out. */
  onDrain(fn: () => void): void;
  /** Calls `fn` once, when the client has gone. */
  onClose(fn: () => void): void;
  end(): void;
}

/**
 * The open SSE streams of this node (ARCHITECTURE §4.7), fed from the durable task event log.
 *
 * Each tenant with open streams has one feed: a cursor in its log. A burst of commit
 * announcements makes the feed read the log after its cursor once, frame each event once
 * into one buffer, and write that buffer (or the frames a `task_id` filter keeps) to every
 * stream that is live, i.e. has everything up to the cursor. So a commit costs one read
 * and one serialization however many streams follow the tenant.
 *
 * A stream that is not live pulls: it reads the next page after its own last seq (shared by
 * the streams at the same place) and writes it, until a read finds nothing more and the
 * feed's cursor did not move meanwhile; then it joins the live ones. A new stream, a
 * reconnect with `Last-Event-ID` and a stream whose socket pushed back (`write` returned
 * false, then `drain`) all catch up this way, so a reader that stalls costs at most one page
 * in memory, and nothing can fall between replay and live.
 */
export class EventStreams {
  private readonly pageSize: number;
  private readonly pageBytes: number;
  private readonly maxPerTenant: number;
  private readonly feeds = new Map<string, TenantFeed>();
  private readonly dirty = new Set<TenantFeed>();
  private flushQueued = false;
  private peakBuffered = 0;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly unsubscribe: () => void;

  constructor(
    readonly store: EventLogStore,
    readonly log: Logger,
    opts: EventStreamsOptions = {},
  ) {
    this.pageSize = opts.pageSize ?? 100;
    this.pageBytes = opts.pageBytes ?? 256 * 1024;
    this.maxPerTenant = opts.maxPerTenant ?? 0;
    this.unsubscribe = store.onTaskEvents((tenantId, seq) => this.notified(tenantId, seq));
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
    const open = this.feeds.get(tenantId)?.streams.size ?? 0;
    if (open < this.maxPerTenant) return;
    throw new LonghaulError(
      "TOO_MANY_STREAMS",
      `This tenant already has ${open} event streams open on this server, its limit; close one (or follow several tasks on one stream without task_id) and retry.`,
      { details: { retry_after_s: FULL_RETRY_AFTER_S } },
    );
  }

  /** Starts streaming the tenant's events after `afterSeq` (only `taskId`'s, if given) to `sink`. */
  open(sink: StreamSink, tenantId: string, taskId: string | null, afterSeq: number): void {
    let feed = this.feeds.get(tenantId);
    if (!feed) {
      feed = new TenantFeed(this, tenantId);
      this.feeds.set(tenantId, feed);
      feed.start();
    }
    const stream = new EventStream(this, feed, sink, taskId, afterSeq);
    feed.streams.add(stream);
    sink.onClose(() => this.remove(stream));
    void stream.pump();
  }

  stats(): EventStreamStats {
    let streams = 0;
    let bufferedBytes = 0;
    for (const feed of this.feeds.values()) {
      for (const s of feed.streams) {
        streams++;
        bufferedBytes += s.sink.bufferedBytes;
      }
    }
    return { streams, bufferedBytes, peakBufferedBytes: this.peakBuffered };
  }

  /** Ends every stream (the server is closing; clients reconnect elsewhere with their last id). */
  close(): void {
    this.unsubscribe();
    clearInterval(this.heartbeat);
    for (const feed of [...this.feeds.values()]) {
      feed.closed = true;
      for (const s of [...feed.streams]) s.end();
    }
    this.feeds.clear();
  }

  /** @internal Frames rows read after `afterSeq`: each event serialized once, all in one buffer. */
  frame(rows: TaskEventRow[], afterSeq: number): Page {
    const texts: string[] = [];
    const data: string[] = [];
    const starts: number[] = [];
    const ends: number[] = [];
    let bytes = 0;
    let lastSeq = afterSeq;
    for (const row of rows) {
      if (texts.length > 0 && bytes >= this.pageBytes) break;
      const json = eventJson(row);
      const text = sseFrame(row, json);
      data.push(json);
      texts.push(text);
      starts.push(bytes);
      bytes += Buffer.byteLength(text);
      ends.push(bytes);
      lastSeq = row.seq;
    }
    const count = texts.length;
    return {
      rows: count < rows.length ? rows.slice(0, count) : rows,
      data,
      bytes: Buffer.from(texts.join("")),
      starts,
      ends,
      lastSeq,
      more: count < rows.length || rows.length === this.pageSize,
    };
  }

  /** @internal */
  get size(): number {
    return this.pageSize;
  }

  /** @internal */
  sawBuffered(bytes: number): void {
    if (bytes > this.peakBuffered) this.peakBuffered = bytes;
  }

  /** @internal The feed failed: its streams end, and their clients resume with their last id. */
  drop(feed: TenantFeed): void {
    feed.closed = true;
    if (this.feeds.get(feed.tenantId) === feed) this.feeds.delete(feed.tenantId);
    for (const s of [...feed.streams]) s.end();
  }

  private notified(tenantId: string, seq: number): void {
    const feed = this.feeds.get(tenantId);
    if (!feed) return;
    if (seq > feed.announced) feed.announced = seq;
    this.dirty.add(feed);
    if (this.flushQueued) return;
    this.flushQueued = true;
    // One read per tenant for all the events of a commit, after the last of them is announced.
    queueMicrotask(() => {
      this.flushQueued = false;
      for (const f of this.dirty) f.pull();
      this.dirty.clear();
    });
  }

  private ping(): void {
    for (const feed of this.feeds.values()) for (const s of feed.streams) s.ping();
  }

  private remove(stream: EventStream): void {
    stream.closed = true;
    const feed = stream.feed;
    feed.leave(stream);
    feed.streams.delete(stream);
    if (feed.streams.size === 0 && this.feeds.get(feed.tenantId) === feed) {
      feed.closed = true;
      this.feeds.delete(feed.tenantId);
    }
  }
}

/** One tenant's position in the log and the streams that are live at it. */
class TenantFeed {
  readonly streams = new Set<EventStream>();
  /** Live streams of the whole tenant. */
  private readonly live = new Set<EventStream>();
  /** Live streams of one task, by task id. */
  private readonly liveByTask = new Map<string, Set<EventStream>>();
  /** Pages being read for streams that pull, shared by those at the same place. */
  private readonly pages = new Map<string, Promise<Page>>();
  /** Every event up to this seq was written to the live streams it is for. */
  private cursor = 0;
  /** The highest seq announced. */
  announced = 0;
  /** Bumped whenever the cursor moves: a pull that saw no move has everything up to the cursor. */
  epoch = 0;
  /** Resolves once the cursor is known (the tenant's newest seq when the feed started). */
  ready: Promise<void> = Promise.resolve();
  closed = false;
  private started = false;
  private reading = false;
  private again = false;

  constructor(
    private readonly hub: EventStreams,
    readonly tenantId: string,
  ) {}

  start(): void {
    this.ready = this.hub.store.lastTaskEventSeq(this.tenantId).then(
      (seq) => {
        this.cursor = Math.max(this.cursor, seq);
        this.started = true;
        this.epoch++;
        this.pull();
      },
      (err: unknown) => {
        this.hub.log.warn({ err, tenantId: this.tenantId }, "event stream read failed; closing it");
        this.hub.drop(this);
      },
    );
  }

  /** Reads what was announced past the cursor, once for all the live streams. */
  pull(): void {
    if (!this.started || this.closed) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    if (this.announced <= this.cursor) return;
    void this.read();
  }

  private async read(): Promise<void> {
    this.reading = true;
    try {
      let more = false;
      do {
        this.again = false;
        const rows = await this.hub.store.taskEvents(this.tenantId, this.cursor, this.hub.size);
        if (this.closed) return;
        const page = this.hub.frame(rows, this.cursor);
        more = page.more;
        if (page.rows.length === 0) continue;
        this.deliver(page);
        this.cursor = page.lastSeq;
        this.epoch++;
      } while (more || (this.again && this.announced > this.cursor));
    } catch (err) {
      this.hub.log.warn({ err, tenantId: this.tenantId }, "event stream read failed; closing it");
      this.hub.drop(this);
    } finally {
      this.reading = false;
    }
  }

  /** Writes a page to every live stream it has something for. */
  private deliver(page: Page): void {
    for (const s of this.live) s.send(page);
    if (this.liveByTask.size === 0) return;
    const { rows } = page;
    for (let i = 0; i < rows.length; i++) {
      const set = this.liveByTask.get(rows[i]!.taskId);
      if (!set) continue;
      for (const s of set) s.sendOne(page, i);
    }
  }

  join(s: EventStream): void {
    if (s.taskId === null) {
      this.live.add(s);
      return;
    }
    let set = this.liveByTask.get(s.taskId);
    if (!set) {
      set = new Set();
      this.liveByTask.set(s.taskId, set);
    }
    set.add(s);
  }

  leave(s: EventStream): void {
    if (s.taskId === null) {
      this.live.delete(s);
      return;
    }
    const set = this.liveByTask.get(s.taskId);
    if (!set) return;
    set.delete(s);
    if (set.size === 0) this.liveByTask.delete(s.taskId);
  }

  /** The page after `afterSeq` (of `taskId` only, if given), read once for the streams that ask in this epoch. */
  page(taskId: string | null, afterSeq: number): Promise<Page> {
    const key = `${this.epoch}|${taskId ?? ""}|${afterSeq}`;
    let p = this.pages.get(key);
    if (!p) {
      p = this.hub.store
        .taskEvents(this.tenantId, afterSeq, this.hub.size, taskId ?? undefined)
        .then((rows) => this.hub.frame(rows, afterSeq));
      this.pages.set(key, p);
      const forget = () => this.pages.delete(key);
      p.then(forget, forget);
    }
    return p;
  }
}

type State = "pulling" | "live" | "blocked";

class EventStream {
  closed = false;
  private state: State = "pulling";

  constructor(
    private readonly hub: EventStreams,
    readonly feed: TenantFeed,
    readonly sink: StreamSink,
    readonly taskId: string | null,
    /** The seq of the last event written (or where the stream started). */
    private lastSeq: number,
  ) {}

  ping(): void {
    if (this.closed || this.state === "blocked") return;
    // A pulling stream is writing pages of its own; it needs no heartbeat.
    if (this.state === "pulling") return;
    if (!this.sink.ping()) this.block();
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.feed.leave(this);
    this.sink.end();
  }

  /** A live stream of the whole tenant: the page's events after its last seq, in one write. */
  send(page: Page): void {
    if (this.state !== "live" || page.lastSeq <= this.lastSeq) return;
    // It may have read the start of this page itself while catching up.
    const from = page.rows[0]!.seq <= this.lastSeq ? page.rows.findIndex((r) => r.seq > this.lastSeq) : 0;
    this.lastSeq = page.lastSeq;
    this.write(page, from, page.rows.length);
  }

  /** A live stream of one task: one of its events, the page's `i`th. */
  sendOne(page: Page, i: number): void {
    const seq = page.rows[i]!.seq;
    if (this.state !== "live" || seq <= this.lastSeq) return;
    this.lastSeq = seq;
    this.write(page, i, i + 1);
  }

  private write(page: Page, from: number, to: number): void {
    const flowing = this.sink.write(page, from, to);
    this.hub.sawBuffered(this.sink.bufferedBytes);
    if (!flowing) this.block();
  }

  /** Catches up from the log, page by page, then joins the feed's live streams. */
  async pump(): Promise<void> {
    try {
      await this.feed.ready;
      for (;;) {
        if (this.closed || this.feed.closed) return;
        const epoch = this.feed.epoch;
        const page = await this.feed.page(this.taskId, this.lastSeq);
        if (this.closed) return;
        if (page.rows.length > 0) {
          this.lastSeq = page.lastSeq;
          const flowing = this.sink.write(page, 0, page.rows.length);
          this.hub.sawBuffered(this.sink.bufferedBytes);
          if (!flowing) return this.block();
        }
        if (page.more) continue;
        // Nothing more up to where the feed was when this read began: live from here.
        if (this.feed.epoch === epoch) {
          this.state = "live";
          this.feed.join(this);
          return;
        }
      }
    } catch (err) {
      this.hub.log.warn({ err, tenantId: this.feed.tenantId }, "event stream read failed; closing it");
      this.end();
    }
  }

  private block(): void {
    if (this.state === "live") this.feed.leave(this);
    this.state = "blocked";
    this.sink.onDrain(() => {
      if (this.closed) return;
      this.state = "pulling";
      void this.pump();
    });
  }
}

declare module "fastify" {
  interface FastifyInstance {
    /** The event streams (SSE and WebSocket) of this server, for their stats. */
    eventStreams: EventStreams;
  }
}
