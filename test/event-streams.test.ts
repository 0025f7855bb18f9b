import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, afterEach, before, describe, test } from "node:test";
import { EventStreams } from "../src/http/event-streams.ts";
import { sseSink } from "../src/http/stream-sinks.ts";
import type { EventLogStore, TaskEventRow } from "../src/store/store.ts";
import { quietLog, sleep, waitFor } from "./helpers.ts";

/**
 * An in-memory event log with the store's contract: announcements after the append, reads
 * answered on a later turn of the event loop (as I/O would be). It counts reads, and how
 * often each event's data is serialized.
 */
class MemoryLog implements EventLogStore {
  readonly rows: TaskEventRow[] = [];
  reads = 0;
  readonly serialized = new Map<number, number>();
  private readonly listeners = new Set<(tenantId: string, seq: number) => void>();

  taskEvents(tenantId: string, afterSeq: number, limit: number, taskId?: string): Promise<TaskEventRow[]> {
    this.reads++;
    return new Promise((resolve) =>
      setImmediate(() =>
        resolve(
          this.rows
            .filter((r) => r.tenantId === tenantId && r.seq > afterSeq && (!taskId || r.taskId === taskId))
            .slice(0, limit),
        ),
      ),
    );
  }

  onTaskEvents(fn: (tenantId: string, seq: number) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  async lastTaskEventSeq(tenantId: string): Promise<number> {
    return this.rows.filter((r) => r.tenantId === tenantId).at(-1)?.seq ?? 0;
  }

  /** Appends events as one commit, then announces each. */
  commit(events: { tenantId: string; taskId: string; pad?: number }[]): void {
    const added = events.map((e) => {
      const seq = this.rows.length + 1;
      const pad = "x".repeat(e.pad ?? 0);
      const counts = this.serialized;
      const row: TaskEventRow = {
        seq,
        tenantId: e.tenantId,
        taskId: e.taskId,
        type: "step.succeeded",
        data: {
          toJSON() {
            counts.set(seq, (counts.get(seq) ?? 0) + 1);
            return { n: seq, pad };
          },
        },
        createdAt: Date.UTC(2026, 0, 1),
      };
      this.rows.push(row);
      return row;
    });
    for (const r of added) this.announce(r.tenantId, r.seq);
  }

  /** Announces an event again (as a second node may). */
  announce(tenantId: string, seq: number): void {
    for (const fn of this.listeners) fn(tenantId, seq);
  }

  /** The seqs a stream of `tenantId` (of `taskId` only, if given) should send after `afterSeq`. */
  expected(tenantId: string, afterSeq: number, taskId: string | null): number[] {
    return this.rows
      .filter((r) => r.tenantId === tenantId && r.seq > afterSeq && (taskId === null || r.taskId === taskId))
      .map((r) => r.seq);
  }
}

interface Client {
  tenantId: string;
  taskId: string | null;
  afterSeq: number;
  ids: () => number[];
  res: http.IncomingMessage;
  close: () => void;
}

describe("EventStreams", () => {
  let log: MemoryLog;
  let streams: EventStreams;
  let server: http.Server;
  let port: number;
  const clients: Client[] = [];

  before(async () => {
    log = new MemoryLog();
    streams = new EventStreams(log, quietLog(), { heartbeatMs: 60_000, pageSize: 20, pageBytes: 64 * 1024 });
    server = http.createServer((req, res) => {
      const q = new URL(req.url ?? "/", "http://x").searchParams;
      const afterSeq = Number(q.get("after"));
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`retry: 1000\nid: ${afterSeq}\n\n`);
      streams.open(sseSink(res), q.get("tenant")!, q.get("task") || null, afterSeq);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    streams.close();
    await new Promise((r) => server.close(r));
  });

  afterEach(() => {
    for (const c of clients.splice(0)) c.close();
  });

  async function subscribe(tenantId: string, taskId: string | null, afterSeq: number): Promise<Client> {
    const req = http.get({
      port,
      host: "127.0.0.1",
      agent: false,
      path: `/?tenant=${tenantId}&task=${taskId ?? ""}&after=${afterSeq}`,
    });
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      req.on("response", resolve);
      req.on("error", reject);
    });
    let text = "";
    res.setEncoding("utf8");
    res.on("data", (c: string) => {
      text += c;
    });
    const client: Client = {
      tenantId,
      taskId,
      afterSeq,
      res,
      // Every id line after the first, which only names where the stream started.
      ids: () => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])).slice(1),
      close: () => req.destroy(),
    };
    clients.push(client);
    return client;
  }

  const caughtUp = (cs: Client[]) =>
    waitFor(
      () => cs.every((c) => c.ids().length === log.expected(c.tenantId, c.afterSeq, c.taskId).length),
      10_000,
      "every stream to have its events",
    );
  const exact = (cs: Client[]) => {
    for (const c of cs) {
      assert.deepEqual(
        c.ids(),
        log.expected(c.tenantId, c.afterSeq, c.taskId),
        `stream of ${c.tenantId}/${c.taskId ?? "*"} after ${c.afterSeq}`,
      );
    }
  };

  test("a commit is read from the log once and each event serialized once, for all of a tenant's streams and filters", async () => {
    // Some history: 12 tasks with two events each.
    for (let t = 0; t < 12; t++) log.commit([{ tenantId: "tn_a", taskId: `task_${t}` }]);
    for (let t = 0; t < 12; t++) log.commit([{ tenantId: "tn_a", taskId: `task_${t}` }]);
    const head = log.rows.length;
    const followers = await Promise.all([
      // The whole tenant from its head, from several older places, and one task each from its start.
      ...Array.from({ length: 10 }, () => subscribe("tn_a", null, head)),
      ...Array.from({ length: 10 }, (_, i) => subscribe("tn_a", null, i * 2)),
      ...Array.from({ length: 12 }, (_, t) => subscribe("tn_a", `task_${t}`, 0)),
    ]);
    await caughtUp(followers);
    await waitFor(() => streams.stats().streams === followers.length);
    await sleep(50);
    const readsBefore = log.reads;
    log.serialized.clear();

    log.commit([
      { tenantId: "tn_a", taskId: "task_3" },
      { tenantId: "tn_a", taskId: "task_7" },
      { tenantId: "tn_a", taskId: "task_new" },
    ]);
    await caughtUp(followers);
    assert.equal(log.reads - readsBefore, 1, "one read for the commit");
    assert.deepEqual(
      [...log.serialized.entries()],
      [
        [head + 1, 1],
        [head + 2, 1],
        [head + 3, 1],
      ],
      "each event serialized once",
    );
    exact(followers);

    // An announcement the feed has already read costs no read.
    const readsNow = log.reads;
    log.announce("tn_a", head + 1);
    await sleep(50);
    assert.equal(log.reads, readsNow, "no read for an event already sent");
    for (const c of followers) c.close();
    await waitFor(() => streams.stats().streams === 0, 5000, "the streams to close");
  });

  test("streams joining, resuming and stalling among bursts each get exactly their events, in order, and other tenants' never", async () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const tenants = ["tn_b", "tn_c"];
    const tasks = ["task_x", "task_y", "task_z"];
    const all: Client[] = [];
    let stalled: Client | null = null;
    for (let round = 0; round < 40; round++) {
      const burst = Array.from({ length: 1 + Math.floor(random() * 4) }, () => ({
        tenantId: tenants[Math.floor(random() * tenants.length)]!,
        taskId: tasks[Math.floor(random() * tasks.length)]!,
        // Now and then an event big enough to fill a stalled reader's socket.
        pad: random() < 0.2 ? 48 * 1024 : 10,
      }));
      log.commit(burst);
      if (round % 3 === 0) {
        const tenantId = tenants[Math.floor(random() * tenants.length)]!;
        const taskId = random() < 0.5 ? null : tasks[Math.floor(random() * tasks.length)]!;
        const own = log.rows.filter((r) => r.tenantId === tenantId);
        // From the head, or resumed from an older event of its own.
        const afterSeq =
          random() < 0.5 ? (own.at(-1)?.seq ?? 0) : (own[Math.floor(random() * own.length)]?.seq ?? 0);
        const c = await subscribe(tenantId, taskId, afterSeq);
        all.push(c);
        if (round === 3) {
          // A reader that stops reading for a while.
          stalled = c;
          c.res.pause();
          log.commit(
            Array.from({ length: 60 }, () => ({ tenantId, taskId: taskId ?? "task_x", pad: 64 * 1024 })),
          );
        }
      }
      if (round === 30) {
        // It really stalled: far less than its backlog has reached it.
        assert.ok((stalled?.res.socket?.bytesRead ?? 0) < 30 * 64 * 1024);
        stalled?.res.resume();
      }
      if (random() < 0.5) await sleep(Math.floor(random() * 5));
    }
    assert.ok(stalled);
    await caughtUp(all);
    await sleep(100);
    exact(all);
    // Some write was refused (past the socket's high-water mark), and none held much more than a page.
    const { peakBufferedBytes } = streams.stats();
    assert.ok(
      peakBufferedBytes > 16 * 1024 && peakBufferedBytes <= 2 * 64 * 1024,
      `peak ${peakBufferedBytes}`,
    );
    for (const c of all) c.close();
  });
});
