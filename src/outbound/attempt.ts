import { type ErrorInfo, errorInfo, LonghaulError } from "../core/errors.ts";
import { endpointSecretAt } from "../core/sealed-at.ts";
import type { DeliveryAttemptInput, DeliveryAttemptResult, TaskEventRow } from "../store/store.ts";
import { signStandardWebhook } from "../webhooks/standard-webhooks.ts";
import { type PostResult, postPinned } from "./post-pinned.ts";
import type { OutboundSettings } from "./settings.ts";
import { classifyAddress, type VettedTarget, vetTarget } from "./ssrf.ts";

const MAX_RETRY_AFTER_MS = 24 * 3_600_000;
const JITTER = 0.1;

/** The JSON body of an outbound webhook: the same bytes on every attempt of one event. */
export function webhookBody(event: TaskEventRow): string {
  const data =
    typeof event.data === "object" && event.data !== null && !Array.isArray(event.data)
      ? event.data
      : { value: event.data };
  return JSON.stringify({
    type: event.type,
    timestamp: new Date(event.createdAt).toISOString(),
    data: { task_id: event.taskId, seq: event.seq, ...data },
  });
}

/**
 * What the delivery log quotes of an answer's body: its first 200 characters from a public
 * address, nothing from any other. The tenant reads the log, and a private target (allowed by
 * `allow_private_networks`) is an internal service, whose answers are not the tenant's to read.
 */
export const answerExcerpt = (address: string, snippet: string): string =>
  classifyAddress(address) === "public" ? snippet.trim().slice(0, 200) : "";

/** `webhook-id` is one per event, so a receiver dedupes retries and replays by it. */
export const webhookId = (event: TaskEventRow) => `msg_${event.seq}`;

/**
 * Makes one attempt of a delivery and says what comes next: `delivered` on a 2xx, `gone`
 * on 410 (the endpoint is disabled), `failed` for a target the SSRF policy refuses (no
 * retry can help), otherwise `retry` at the next slot of the schedule (jittered, and never
 * before a `Retry-After`), or `dead` after its last slot.
 */
export async function attemptDelivery(
  input: DeliveryAttemptInput,
  settings: OutboundSettings,
  opts: { now: () => number; random: () => number },
): Promise<DeliveryAttemptResult> {
  const { endpoint, event } = input;
  const body = webhookBody(event);
  const id = webhookId(event);
  const timestampS = Math.floor(opts.now() / 1000);
  let answer: PostResult;
  let signature: string;
  try {
    // During a rotation window every unexpired secret signs; a receiver accepts any (space-separated).
    const at = endpointSecretAt(endpoint.id);
    signature = [endpoint.secret, ...endpoint.previousSecrets]
      .map((stored) =>
        signStandardWebhook({ id, timestampS, body, secret: settings.secrets.open(stored, at) }),
      )
      .join(" ");
  } catch (err) {
    // Another node sealed it under a key this one lacks: retry, so the key can be deployed meanwhile.
    const message = err instanceof Error ? err.message : String(err);
    return next(input, settings, opts, null, null, errorInfo("SECRET_UNREADABLE", message));
  }
  let target: VettedTarget;
  try {
    target = await vetTarget(endpoint.url, settings);
    answer = await postPinned(target, {
      body,
      timeoutMs: settings.timeoutMs,
      headers: {
        "content-type": "application/json",
        "user-agent": "longhaul-webhooks/1",
        "webhook-id": id,
        "webhook-timestamp": String(timestampS),
        "webhook-signature": signature,
      },
    });
  } catch (err) {
    if (err instanceof LonghaulError && err.code === "TARGET_FORBIDDEN") {
      return { outcome: "failed", status: null, error: { code: err.code, message: err.message } };
    }
    const message = err instanceof Error ? err.message : String(err);
    return next(
      input,
      settings,
      opts,
      null,
      null,
      errorInfo("CONNECTION_FAILED", `Could not reach ${endpoint.url}: ${message}`),
    );
  }
  const { status } = answer;
  if (status >= 200 && status < 300) return { outcome: "delivered", status };
  const excerpt = answerExcerpt(target.address, answer.snippet);
  const said = excerpt ? `: ${excerpt}` : "";
  if (status === 410) {
    return {
      outcome: "gone",
      status,
      error: errorInfo(
        "ENDPOINT_GONE",
        `${endpoint.url} answered 410 Gone, so the endpoint was disabled${said}`,
      ),
    };
  }
  const error: ErrorInfo =
    status >= 300 && status < 400
      ? errorInfo(
          "REDIRECT_REFUSED",
          `${endpoint.url} answered ${status}; redirects are not followed, so register the final URL.`,
        )
      : errorInfo("HTTP_STATUS", `${endpoint.url} answered ${status}${said}`);
  return next(input, settings, opts, status, answer.retryAfterMs, error);
}

function next(
  input: DeliveryAttemptInput,
  settings: OutboundSettings,
  opts: { now: () => number; random: () => number },
  status: number | null,
  retryAfterMs: number | null,
  error: ErrorInfo,
): DeliveryAttemptResult {
  const made = input.delivery.roundAttempts + 1;
  const at = nextAttemptAt(made, settings, opts, retryAfterMs);
  if (at === null) {
    return {
      outcome: "dead",
      status,
      error: { ...error, message: `${error.message} (gave up after ${made} attempts; replay it when fixed)` },
    };
  }
  return { outcome: "retry", status, error, nextAttemptAt: at };
}

/**
 * When the attempt after `made` failed ones goes out on the schedule (jittered, never before
 * a `Retry-After`), or null after its last slot. Shared by webhook deliveries and approval
 * messages (src/notify), so both retry alike.
 */
export function nextAttemptAt(
  made: number,
  settings: Pick<OutboundSettings, "retryScheduleMs">,
  opts: { now: () => number; random: () => number },
  retryAfterMs: number | null,
): number | null {
  const slot = settings.retryScheduleMs[made];
  if (slot === undefined) return null;
  const jittered = slot * (1 - JITTER + 2 * JITTER * opts.random());
  const delay = Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
  return opts.now() + Math.round(delay);
}
