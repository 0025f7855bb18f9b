import type { Readable } from "node:stream";
import { LonghaulError } from "../core/errors.ts";
import type { IdleTimer } from "./idle-timer.ts";
import { readFailed, timedOut, tooLarge } from "./url-read-errors.ts";

export interface BodyGuard {
  /** The URL as messages show it. */
  what: string;
  /** The answer's Content-Length, when it gave one. */
  declared?: number | undefined;
  /** `limits.file_max_bytes`; absent: no cap. */
  maxBytes?: number | undefined;
  timer: IdleTimer;
  timeoutMs: number;
  /**
   * Resolves once the transport is done with the answer, to an error it saw after the body
   * (bytes past Content-Length make Node's parser fail the request, not the body stream).
   */
  settled?: () => Promise<Error | null>;
}

/**
 * The bytes of an upstream answer, checked as they pass: past the cap is FILE_TOO_LARGE, more
 * bytes than Content-Length or fewer (a connection cut short) is URL_READ_FAILED, and so is no
 * byte within the idle timeout. A short body never ends as if it were whole. The source is
 * destroyed when the reader stops early or the read fails.
 */
export async function* guardedBody(source: Readable, g: BodyGuard): AsyncGenerator<Buffer> {
  let count = 0;
  const onAbort = () => source.destroy(timedOut(g.what, g.timeoutMs));
  g.timer.signal.addEventListener("abort", onAbort, { once: true });
  if (g.timer.signal.aborted) onAbort();
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      g.timer.touch();
      count += chunk.length;
      if (g.maxBytes !== undefined && count > g.maxBytes) throw tooLarge(g.what, g.maxBytes);
      if (g.declared !== undefined && count > g.declared) throw longer(g);
      yield chunk;
    }
    if (g.declared !== undefined && count < g.declared) {
      throw readFailed(g.what, `the body ended after ${count} of its ${g.declared} bytes.`, false);
    }
    const late = await g.settled?.();
    if (late) throw longer(g, late);
  } catch (err) {
    if (err instanceof LonghaulError) throw err;
    if (g.timer.signal.aborted) throw timedOut(g.what, g.timeoutMs);
    const why = err instanceof Error ? err.message : String(err);
    throw readFailed(g.what, `the body was cut short after ${count} bytes (${why}).`, false, err);
  } finally {
    g.timer.signal.removeEventListener("abort", onAbort);
    g.timer.clear();
    source.destroy();
  }
}

const longer = (g: BodyGuard, cause?: Error) =>
  readFailed(
    g.what,
    g.declared === undefined
      ? `the answer was malformed after its body (${cause?.message ?? "unknown"}).`
      : `the body is longer than its Content-Length of ${g.declared} bytes.`,
    false,
    cause,
  );
