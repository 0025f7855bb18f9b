import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import type { VettedTarget } from "./ssrf.ts";

export interface PostResult {
  status: number;
  /** `Retry-After` in milliseconds, when the answer carried one in seconds. */
  retryAfterMs: number | null;
  /** The first bytes of the answer, for the delivery log. */
  snippet: string;
}

const SNIPPET_BYTES = 512;

/**
 * POSTs `body` to a vetted target over a fresh connection to the vetted address: the
 * resolver is never asked again, so DNS rebinding cannot redirect the request, while the
 * Host header and TLS SNI still carry the name. Redirects are not followed (a 3xx is just
 * a status). Rejects on connection errors and when `timeoutMs` passes before the answer.
 */
export function postPinned(
  target: VettedTarget,
  req: { headers: Record<string, string>; body: string; timeoutMs: number },
): Promise<PostResult> {
  const { url, host, address, family } = target;
  const pinned = pinnedLookup(address, family);
  const secure = url.protocol === "https:";
  return new Promise<PostResult>((resolve, reject) => {
    const body = Buffer.from(req.body, "utf8");
    const r = (secure ? https : http).request({
      method: "POST",
      hostname: host,
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      headers: { ...req.headers, "content-length": String(body.length) },
      lookup: pinned,
      agent: false,
      ...(secure && !isIP(host) ? { servername: host } : {}),
    });
    const timer = setTimeout(
      () => r.destroy(new Error(`no answer within ${Math.round(req.timeoutMs / 1000)} s`)),
      req.timeoutMs,
    );
    r.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    r.on("response", (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        res.destroy();
        const seconds = Number(res.headers["retry-after"]);
        resolve({
          status: res.statusCode ?? 0,
          retryAfterMs: Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : null,
          snippet: Buffer.concat(chunks).subarray(0, SNIPPET_BYTES).toString("utf8"),
        });
      };
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= SNIPPET_BYTES) finish();
      });
      res.on("end", finish);
      res.on("error", finish);
    });
    r.end(body);
  });
}

/** A DNS lookup that answers the vetted address only, whatever name it is asked for. */
export function pinnedLookup(address: string, family: number): LookupFunction {
  return ((_name: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (options?.all) cb(null, [{ address, family }]);
    else cb(null, address, family);
  }) as unknown as LookupFunction;
}
