import { type Dirent, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type Logger, pino } from "pino";
import type { BlobStore } from "../src/blobs/blob-store.ts";
import type { Store } from "../src/store/store.ts";

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = "longhaul-test-"): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Polls `fn` until it returns a truthy value, or fails after `timeoutMs`. */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  timeoutMs = 10_000,
  what = "condition",
): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await fn();
    if (last) return last as NonNullable<T>;
    if (Date.now() > until)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}; last value: ${JSON.stringify(last)}`,
      );
    await new Promise((r) => setTimeout(r, 25));
  }
}

export const quietLog = () => pino({ level: process.env.LONGHAUL_TEST_LOG_LEVEL ?? "silent" });

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Whether a lone write's WAL sync left the event loop free: a callback queued right after the
 * write runs before the write is answered when the sync is on the thread pool, after it when
 * the sync blocked the loop. Three writes, each alone.
 */
export async function loopFreeDuringSync(store: Store): Promise<string[][]> {
  const orders: string[][] = [];
  for (let i = 0; i < 3; i++) {
    const order: string[] = [];
    const write = store
      .createTenant({ name: `loop-${i}`, keyHash: `loop-${i}` })
      .then(() => order.push("write"));
    setImmediate(() => order.push("loop"));
    await write;
    await new Promise((r) => setImmediate(r));
    orders.push(order);
  }
  return orders;
}

/** A logger at `level` (default info) whose lines are kept, parsed, in `lines`. */
export function captureLog(level = "info"): { lines: Record<string, unknown>[]; log: Logger } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, log: pino({ level }, sink) };
}

/**
 * This process's CPU time so far (user and system), in ms: a bound on the CPU a piece of work
 * takes holds on a busy machine, where other processes stretch its wall-clock time.
 */
export function cpuNowMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Every temporary file a blob store's write left under `root` (`.tmp-…`), by full path. */
export function blobTempsUnder(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.startsWith(".tmp-")) out.push(join(dir, e.name));
    }
  };
  walk(root);
  return out;
}

/** The keys of the files' blobs (`files/…`) a blob store holds. */
export async function blobKeys(blobs: BlobStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const k of blobs.list("files/")) keys.push(k);
  return keys;
}
