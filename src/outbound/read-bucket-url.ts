import { Readable } from "node:stream";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import type { OpenedFile } from "../core/file-refs.ts";
import { type BucketCredentials, GCS_INTEROP_ENDPOINT } from "../core/storage-urls.ts";
import { guardedBody } from "./guarded-body.ts";
import type { IdleTimer } from "./idle-timer.ts";
import { readFailed, retriableStatus, shownUrl, timedOut, tooLarge } from "./url-read-errors.ts";

/**
 * Reads `s3://bucket/key` or `gs://bucket/object` with the deployment's credentials
 * (`storage_urls`), through `@aws-sdk/client-s3`: Cloud Storage answers the same GetObject on its
 * interoperability endpoint with an HMAC key. The endpoint is the operator's, so no SSRF check
 * applies; the cap, the idle timeout and the length check apply as to an https read.
 */
export class BucketUrlReader {
  private readonly client: S3Client;

  constructor(scheme: "s3" | "gs", creds: BucketCredentials) {
    const endpoint = creds.endpoint ?? (scheme === "gs" ? GCS_INTEROP_ENDPOINT : undefined);
    this.client = new S3Client({
      region: creds.region ?? (scheme === "gs" ? "auto" : "us-east-1"),
      ...(endpoint ? { endpoint } : {}),
      forcePathStyle: creds.force_path_style ?? endpoint !== undefined,
      credentials: { accessKeyId: creds.access_key_id, secretAccessKey: creds.secret_access_key },
      // As the S3 blob store: checksums only where required, since compatible servers differ.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
  }

  async open(
    url: URL,
    o: { maxBytes?: number | undefined; timer: IdleTimer; timeoutMs: number },
  ): Promise<OpenedFile> {
    const what = shownUrl(url);
    let out: import("@aws-sdk/client-s3").GetObjectCommandOutput;
    try {
      out = await this.client.send(
        new GetObjectCommand({ Bucket: url.hostname, Key: decodeURIComponent(url.pathname.slice(1)) }),
        { abortSignal: o.timer.signal },
      );
    } catch (err) {
      o.timer.clear();
      if (o.timer.signal.aborted) throw timedOut(what, o.timeoutMs);
      const status = (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
      const why = status === 404 ? "no such object" : (err as Error).message;
      throw readFailed(
        what,
        status ? `the store answered ${status} (${why}).` : `no answer (${why}).`,
        status !== undefined && !retriableStatus(status),
        err,
      );
    }
    o.timer.touch();
    const body = out.Body as Readable;
    const declared = out.ContentLength;
    if (declared !== undefined && o.maxBytes !== undefined && declared > o.maxBytes) {
      body.destroy();
      o.timer.clear();
      throw tooLarge(what, o.maxBytes);
    }
    return {
      stream: Readable.from(
        guardedBody(body, { what, declared, maxBytes: o.maxBytes, timer: o.timer, timeoutMs: o.timeoutMs }),
        { objectMode: false },
      ),
      ...(declared === undefined ? {} : { size: declared }),
      ...(out.ContentType ? { contentType: out.ContentType } : {}),
    };
  }
}
