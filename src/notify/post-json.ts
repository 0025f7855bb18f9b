import { errorInfo, LonghaulError } from "../core/errors.ts";
import type { PostResult } from "../outbound/post-pinned.ts";
import { postPinned } from "../outbound/post-pinned.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import { vetTarget } from "../outbound/ssrf.ts";
import type { SendOutcome } from "./send-outcome.ts";

/**
 * POSTs JSON through the outbound webhooks' guard (ARCHITECTURE §4.7): the target vetted by
 * the SSRF policy, the connection pinned to the vetted address, no redirects. `judge` reads a
 * 2xx answer, for APIs that answer 200 with an error in the body.
 */
export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  outbound: OutboundSettings,
  judge: (answer: PostResult) => SendOutcome = () => ({ ok: true }),
): Promise<SendOutcome> {
  let answer: PostResult;
  const where = redacted(url);
  try {
    const target = await vetTarget(url, outbound);
    answer = await postPinned(target, {
      body: typeof body === "string" ? body : JSON.stringify(body),
      timeoutMs: outbound.timeoutMs,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "user-agent": "longhaul-notify/1",
        ...headers,
      },
    });
  } catch (err) {
    if (err instanceof LonghaulError && err.code === "TARGET_FORBIDDEN") {
      return { ok: false, retry: false, error: { code: err.code, message: err.message } };
    }
    const message = err instanceof Error ? err.message : String(err);
    return {
      ok: false,
      retry: true,
      error: errorInfo("CONNECTION_FAILED", `Could not reach ${where}: ${message}`),
    };
  }
  if (answer.status >= 200 && answer.status < 300) return judge(answer);
  return {
    ok: false,
    retry: true,
    retryAfterMs: answer.retryAfterMs,
    error: errorInfo("HTTP_STATUS", `${where} answered ${answer.status}`),
  };
}

/** A URL as an error may quote it: a webhook URL's path and query are its secret (Slack, WeCom). */
export function redacted(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}/…`;
  } catch {
    return "the target";
  }
}
