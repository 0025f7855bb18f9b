import { LonghaulError, nonRetriable } from "../core/errors.ts";
import type { OpenedFile, UrlPolicy } from "../core/file-refs.ts";
import { type StorageUrlsConfig, URL_READ_TIMEOUT_S } from "../core/storage-urls.ts";
import { type IdleTimers, idleTimer } from "./idle-timer.ts";
import type { BucketUrlReader } from "./read-bucket-url.ts";
import { openHttpsUrl } from "./read-https-url.ts";
import { checkRefUrl } from "./ref-url.ts";
import type { Resolve } from "./ssrf.ts";
import { readFailed, urlNotAllowed } from "./url-read-errors.ts";

export interface UrlReaderOptions {
  /** `outbound.allow_private_networks`: plain http and private hosts (development and tests). */
  policy: UrlPolicy;
  /** `limits.file_max_bytes`; absent: no cap. */
  maxBytes?: number | undefined;
  /** `storage_urls`: credentials for s3:// and gs://, and the idle timeout. */
  storage?: StorageUrlsConfig | undefined;
  /** The idle timer of each read; injected by tests, which end a read by its signal. */
  timers?: IdleTimers | undefined;
  /** The resolver of https hosts; injected by tests. */
  resolve?: Resolve | undefined;
}

/** Opens `{"url": …}` references for task code: one per deployment, its bucket clients made once. */
export interface UrlReader {
  open(text: string): Promise<OpenedFile>;
}

/**
 * The reader of a deployment's `{"url": …}` references (ARCHITECTURE §4.10): `https://` through
 * the SSRF guard, `s3://` and `gs://` through `storage_urls`' credentials (the S3 client is
 * loaded on the first such read: `@aws-sdk/client-s3` is an optional dependency). Errors keep
 * stable codes: URL_NOT_ALLOWED, FILE_TOO_LARGE, URL_READS_NOT_CONFIGURED and URL_READ_FAILED.
 */
export function urlReader(o: UrlReaderOptions): UrlReader {
  const timeoutMs = (o.storage?.timeout_s ?? URL_READ_TIMEOUT_S) * 1000;
  const timers = o.timers ?? idleTimer;
  const buckets = new Map<"s3" | "gs", Promise<BucketUrlReader>>();
  const bucketReader = (scheme: "s3" | "gs"): Promise<BucketUrlReader> => {
    let reader = buckets.get(scheme);
    if (!reader) {
      const creds = o.storage?.[scheme];
      if (!creds) {
        throw nonRetriable(
          new LonghaulError(
            "URL_READS_NOT_CONFIGURED",
            `Reading ${scheme}:// URLs needs credentials: set storage_urls.${scheme} in the configuration.`,
          ),
        );
      }
      reader = import("./read-bucket-url.ts").then(
        (m) => new m.BucketUrlReader(scheme, creds),
        (err: unknown) => {
          buckets.delete(scheme);
          throw nonRetriable(
            new LonghaulError(
              "URL_READS_NOT_CONFIGURED",
              `Reading ${scheme}:// URLs needs the optional package @aws-sdk/client-s3; install it.`,
              { cause: err },
            ),
          );
        },
      );
      buckets.set(scheme, reader);
    }
    return reader;
  };
  return {
    async open(text) {
      let url: URL;
      try {
        url = checkRefUrl(text, o.policy);
      } catch (err) {
        throw err instanceof LonghaulError ? urlNotAllowed(err.message) : err;
      }
      const scheme = url.protocol.slice(0, -1);
      if (scheme === "s3" || scheme === "gs") {
        const reader = await bucketReader(scheme);
        return reader.open(url, { maxBytes: o.maxBytes, timer: timers(timeoutMs), timeoutMs });
      }
      if (scheme !== "https" && scheme !== "http")
        throw readFailed(text.slice(0, 200), "unknown scheme.", true);
      return openHttpsUrl(url, {
        policy: o.policy,
        maxBytes: o.maxBytes,
        timer: timers(timeoutMs),
        timeoutMs,
        resolve: o.resolve,
      });
    },
  };
}
