import { ProviderError, type ResultFiles } from "../provider.ts";

/** Waits before the 2nd, 3rd and 4th download attempt; a `Retry-After` longer than one wins, up to 10 s. */
export const DOWNLOAD_RETRY_MS: readonly number[] = [200, 1000, 3000];
const RETRY_AFTER_CAP_MS = 10_000;

export interface ResultFileOptions {
  /** The blob store; absent, the file is read into memory. */
  files?: ResultFiles | undefined;
  /** Where the file is kept in `files` (`resultFileKey`). */
  key: string;
  /** Starts one download of the file. */
  fetch: () => Promise<AsyncIterable<Uint8Array>>;
  retryMs?: readonly number[];
  sleep?: (ms: number) => Promise<void>;
}

/**
 * A batch result file's bytes, downloaded once. With a blob store the download is written
 * through its atomic `put`: a blob under `key` is a whole file, so a file already there (a
 * worker died after fetching it) is read, not fetched again, and a download cut off leaves
 * nothing to be taken for a complete file. A retriable failure (network, 5xx, 408, 429, a
 * body short of its length) is retried after each wait of `retryMs`, then thrown: the engine
 * retries the event later, and the files already kept are not fetched again.
 */
export async function resultFile(o: ResultFileOptions): Promise<AsyncIterable<Uint8Array>> {
  const { files, key } = o;
  if (files) {
    if ((await files.stat(key)) === null) {
      await retrying(o, async () => {
        await files.put(key, await o.fetch());
      });
    }
    return files.get(key);
  }
  const chunks = await retrying(o, async () => {
    const got: Uint8Array[] = [];
    for await (const chunk of await o.fetch()) got.push(chunk);
    return got;
  });
  return (async function* () {
    yield* chunks;
  })();
}

async function retrying<T>(o: ResultFileOptions, attempt: () => Promise<T>): Promise<T> {
  const waits = o.retryMs ?? DOWNLOAD_RETRY_MS;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  for (let i = 0; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      const wait = waits[i];
      if (!(err instanceof ProviderError) || !err.retriable || wait === undefined) throw err;
      await sleep(Math.max(wait, Math.min(err.retryAfterMs ?? 0, RETRY_AFTER_CAP_MS)));
    }
  }
}
