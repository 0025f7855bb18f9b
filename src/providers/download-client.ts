import { errorText, httpFailure, type JsonClientOptions } from "./json-client.ts";
import { ProviderError } from "./provider.ts";

/** The bytes of `path`, streamed; `what` completes "could not …" in error messages. */
export type Download = (what: string, path: string) => Promise<AsyncIterable<Uint8Array>>;

/**
 * GETs a provider's file (a batch's result file) as a stream, with the errors of `jsonClient`:
 * a network failure, a 5xx, a 408 or a 429 is a retriable `ProviderError`, any other non-2xx
 * is not. `timeoutMs` bounds the wait for the answer and then each silence between two
 * chunks, not the whole transfer, so a large file is not cut off for being large. A body that
 * breaks off, or ends short of its `Content-Length`, throws a retriable `ProviderError` from
 * the stream: whoever writes it must not keep what came (the blob store's `put` does not).
 */
export function downloadClient(options: JsonClientOptions): Download {
  const base = options.baseUrl.replace(/\/+$/, "");
  const fetchImpl = options.fetchImpl ?? fetch;
  const { name, timeoutMs } = options;

  return async (what, path) => {
    const abort = new AbortController();
    let timer = setTimeout(() => abort.abort(), timeoutMs);
    const quiet = () => {
      clearTimeout(timer);
      timer = setTimeout(() => abort.abort(), timeoutMs);
    };
    const broken = (cause: unknown) =>
      new ProviderError(
        `${name}: could not ${what}: ${abort.signal.aborted ? `no byte for ${timeoutMs} ms` : errorText(cause)}; the download can be retried.`,
        { retriable: true, cause },
      );
    let res: Response;
    try {
      res = await fetchImpl(`${base}${path}`, {
        method: "GET",
        headers: { ...options.headers },
        signal: abort.signal,
      });
    } catch (cause) {
      clearTimeout(timer);
      throw broken(cause);
    }
    if (res.status < 200 || res.status >= 300) {
      const text = await res.text().catch(() => "");
      clearTimeout(timer);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      throw httpFailure(
        name,
        what,
        res.status,
        body,
        res.headers.get("retry-after"),
        (options.now ?? Date.now)(),
      );
    }
    // The wait for the first byte starts when the stream is read.
    clearTimeout(timer);
    const declared = res.headers.get("content-length");
    const expected = declared === null ? undefined : Number(declared);
    const body = res.body;
    async function* bytes(): AsyncIterable<Uint8Array> {
      let size = 0;
      quiet();
      try {
        if (body !== null) {
          for await (const chunk of body as AsyncIterable<Uint8Array>) {
            quiet();
            size += chunk.byteLength;
            yield chunk;
          }
        }
      } catch (cause) {
        throw broken(cause);
      } finally {
        clearTimeout(timer);
        abort.abort();
      }
      if (expected !== undefined && Number.isFinite(expected) && size !== expected) {
        throw new ProviderError(
          `${name}: could not ${what}: the body ended after ${size} of its ${expected} bytes; the download can be retried.`,
          { retriable: true },
        );
      }
    }
    return bytes();
  };
}
