import { Readable } from "node:stream";
import { LonghaulError } from "../core/errors.ts";
import type { OpenedFile, UrlPolicy } from "../core/file-refs.ts";
import { URL_READ_MAX_REDIRECTS } from "../core/storage-urls.ts";
import { getPinned, type PinnedAnswer } from "./get-pinned.ts";
import { guardedBody } from "./guarded-body.ts";
import type { IdleTimer } from "./idle-timer.ts";
import { checkRefUrl } from "./ref-url.ts";
import { type Resolve, vetTarget } from "./ssrf.ts";
import {
  readFailed,
  retriableStatus,
  shownUrl,
  timedOut,
  tooLarge,
  urlNotAllowed,
} from "./url-read-errors.ts";

export interface HttpsRead {
  policy: UrlPolicy;
  maxBytes?: number | undefined;
  timer: IdleTimer;
  timeoutMs: number;
  resolve?: Resolve | undefined;
}

/**
 * Opens an `https://` URL (plain `http://` only under `allow_private_networks`) for a task to
 * stream. Every hop, the first and each redirect (at most five), is checked by its text
 * (`checkRefUrl`) and by every address its name resolves to (`vetTarget`), then connected to at
 * the vetted address alone: a redirect to a private, loopback or link-local address, or to
 * another scheme, is URL_NOT_ALLOWED. A Content-Length over `limits.file_max_bytes` is refused
 * before a byte is read; the body is guarded as it streams (`guardedBody`).
 */
export async function openHttpsUrl(start: URL, o: HttpsRead): Promise<OpenedFile> {
  let url = start;
  for (let hop = 0; ; hop++) {
    const what = shownUrl(url);
    const answer = await request(url, what, o);
    const { res } = answer;
    o.timer.touch();
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (status >= 300 && status < 400 && location) {
      res.destroy();
      if (hop >= URL_READ_MAX_REDIRECTS) {
        o.timer.clear();
        throw readFailed(shownUrl(start), `more than ${URL_READ_MAX_REDIRECTS} redirects.`, true);
      }
      try {
        url = new URL(location, url);
      } catch {
        o.timer.clear();
        throw readFailed(what, `a redirect to "${location.slice(0, 200)}", which is not a URL.`, true);
      }
      continue;
    }
    if (status < 200 || status >= 300) {
      res.destroy();
      o.timer.clear();
      throw readFailed(what, `the server answered ${status}.`, !retriableStatus(status));
    }
    const length = res.headers["content-length"];
    const declared = length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
    if (declared !== undefined && o.maxBytes !== undefined && declared > o.maxBytes) {
      res.destroy();
      o.timer.clear();
      throw tooLarge(what, o.maxBytes);
    }
    const type = res.headers["content-type"];
    return {
      stream: Readable.from(
        guardedBody(res, {
          what,
          declared,
          maxBytes: o.maxBytes,
          timer: o.timer,
          timeoutMs: o.timeoutMs,
          settled: answer.settled,
        }),
        { objectMode: false },
      ),
      ...(declared === undefined ? {} : { size: declared }),
      ...(type ? { contentType: type } : {}),
    };
  }
}

/** One hop: checked, vetted, then asked at the vetted address. */
async function request(url: URL, what: string, o: HttpsRead): Promise<PinnedAnswer> {
  try {
    try {
      checkRefUrl(url.href, o.policy);
      if (url.protocol !== "https:" && url.protocol !== "http:") {
        throw urlNotAllowed(`${what}: a redirect leads only to another https:// URL.`);
      }
    } catch (err) {
      throw err instanceof LonghaulError ? urlNotAllowed(err.message) : err;
    }
    let target: Awaited<ReturnType<typeof vetTarget>>;
    try {
      target = await vetTarget(url, o.policy, o.resolve);
    } catch (err) {
      if (err instanceof LonghaulError) {
        // vetTarget speaks of webhooks; the address it names is what matters here.
        const why = err.message.replace(/(; webhooks|, which webhooks).*$/, "");
        throw urlNotAllowed(`${what}: ${why}; files are read from public addresses only.`);
      }
      throw readFailed(what, `its host did not resolve (${(err as Error).message}).`, false, err);
    }
    try {
      return await getPinned(target, {
        headers: { "user-agent": "longhaul", "accept-encoding": "identity" },
        signal: o.timer.signal,
      });
    } catch (err) {
      if (o.timer.signal.aborted) throw timedOut(what, o.timeoutMs);
      throw readFailed(what, `no answer (${(err as Error).message}).`, false, err);
    }
  } catch (err) {
    o.timer.clear();
    throw err;
  }
}
