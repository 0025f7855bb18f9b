import { type ErrorInfo, errorInfo, LonghaulError } from "../core/errors.ts";
import { endpointSecretAt } from "../core/sealed-at.ts";
import type { SinkKind } from "../core/sink-kind.ts";
import { nextAttemptAt } from "../outbound/attempt.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import { vetHost } from "../outbound/ssrf.ts";
import type { DeliveryAttemptInput, DeliveryAttemptResult } from "../store/store.ts";
import type { SinkPool } from "./sink-pool.ts";
import { sinkBody } from "./sink-publisher.ts";
import { displaySinkUrl, parseSinkUrl, scrubCredentials, sinkPort, sinkTls } from "./sink-url.ts";

/**
 * Publishes one delivery to its sink's broker and says what comes next, as `attemptDelivery`
 * does for a webhook: `delivered` once the broker has taken it (JetStream ack, RabbitMQ
 * confirm, XADD), `failed` for a host the SSRF policy refuses, otherwise `retry` on the
 * schedule or `dead` after its last slot. Errors name the broker by its URL without
 * credentials, and quote the broker's message with them scrubbed.
 */
export async function attemptSinkDelivery(
  input: DeliveryAttemptInput,
  settings: OutboundSettings,
  pool: SinkPool,
  opts: { now: () => number; random: () => number },
): Promise<DeliveryAttemptResult> {
  const { endpoint, event } = input;
  const kind = endpoint.kind as SinkKind;
  let url: URL;
  try {
    url = parseSinkUrl(kind, settings.secrets.open(endpoint.secret, endpointSecretAt(endpoint.id)));
  } catch (err) {
    // Another node sealed it under a key this one lacks: retry, so the key can be deployed meanwhile.
    const message = err instanceof Error ? err.message : String(err);
    return next(input, settings, opts, errorInfo("SECRET_UNREADABLE", message));
  }
  const where = displaySinkUrl(url);
  try {
    const target = await vetHost(url, settings);
    const publisher = await pool.get(endpoint.id, kind, {
      url,
      address: target.address,
      port: sinkPort(url),
      tls: sinkTls(url),
      target: endpoint.target ?? "",
    });
    await publisher.publish(
      { id: String(event.seq), key: event.taskId, type: event.type, seq: event.seq, body: sinkBody(event) },
      settings.timeoutMs,
    );
    return { outcome: "delivered", status: null };
  } catch (err) {
    if (err instanceof LonghaulError && err.code === "TARGET_FORBIDDEN") {
      return { outcome: "failed", status: null, error: { code: err.code, message: err.message } };
    }
    // The connection may be half-broken (a timed-out confirm): start the next attempt afresh.
    await pool.drop(endpoint.id);
    const message = scrubCredentials(err instanceof Error ? err.message : String(err), url);
    return next(
      input,
      settings,
      opts,
      errorInfo("CONNECTION_FAILED", `Could not publish to ${where}: ${message}`),
    );
  }
}

function next(
  input: DeliveryAttemptInput,
  settings: OutboundSettings,
  opts: { now: () => number; random: () => number },
  error: ErrorInfo,
): DeliveryAttemptResult {
  const made = input.delivery.roundAttempts + 1;
  const at = nextAttemptAt(made, settings, opts, null);
  if (at === null) {
    return {
      outcome: "dead",
      status: null,
      error: { ...error, message: `${error.message} (gave up after ${made} attempts; replay it when fixed)` },
    };
  }
  return { outcome: "retry", status: null, error, nextAttemptAt: at };
}
