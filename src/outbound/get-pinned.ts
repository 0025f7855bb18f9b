import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { pinnedLookup } from "./post-pinned.ts";
import type { VettedTarget } from "./ssrf.ts";

/** An answer to a pinned GET, and when its transport is done with it. */
export interface PinnedAnswer {
  res: IncomingMessage;
  /** Resolves once the connection is closed, to an error the request saw after the answer began, or null. */
  settled: () => Promise<Error | null>;
}

/**
 * GETs a vetted target over a fresh connection to the vetted address, as `postPinned` posts:
 * the resolver is not asked again (no DNS rebinding), Host and TLS SNI keep the name, and
 * redirects are answers, not followed here. `signal` aborts the request and its body.
 */
export function getPinned(
  target: VettedTarget,
  req: { headers: Record<string, string>; signal: AbortSignal },
): Promise<PinnedAnswer> {
  const { url, host, address, family } = target;
  const pinned = pinnedLookup(address, family);
  const secure = url.protocol === "https:";
  return new Promise<PinnedAnswer>((resolve, reject) => {
    const r = (secure ? https : http).request({
      method: "GET",
      hostname: host,
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      headers: req.headers,
      lookup: pinned,
      agent: false,
      signal: req.signal,
      ...(secure && !isIP(host) ? { servername: host } : {}),
    });
    let late: Error | null = null;
    let answered = false;
    const closed = new Promise<void>((done) => r.on("close", done));
    r.on("error", (err) => {
      if (answered) late ??= err;
      else reject(err);
    });
    r.on("response", (res) => {
      answered = true;
      resolve({ res, settled: () => closed.then(() => late) });
    });
    r.end();
  });
}
