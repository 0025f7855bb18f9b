import type { Logger } from "pino";
import type { Static } from "typebox";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { isRecordedRefusal } from "../core/webhook-refusal.ts";
import type { Source } from "../ingress/sources.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { InboxStore, WebhookRefusalStore } from "../store/store.ts";
import { recordWebhook } from "../usecases/record-webhook.ts";
import type { HookReceipt } from "../wire/events.ts";

export interface WebhookActionDeps {
  inbox: InboxStore;
  clock: Clock;
  sources: ReadonlyMap<string, Source>;
  metrics?: Metrics | undefined;
  log: Pick<Logger, "info">;
}

/**
 * `POST /hooks/:source` without its transport, for both doors (the path ahead of the router,
 * `http/hook-ingress.ts`, and the router's route, which `lh.fetch` reaches): verify and record
 * the raw bytes (`recordWebhook`), count the delivery, log a delivery id the sender put in a
 * header its signature does not cover (the inbox dedupes on the event id), and answer.
 */
export async function webhookAction(
  d: WebhookActionDeps,
  w: { source: string; headers: Record<string, string | string[] | undefined>; body: Buffer },
): Promise<Static<typeof HookReceipt>> {
  const r = await recordWebhook({ inbox: d.inbox, clock: d.clock, sources: d.sources }, w);
  d.metrics?.webhooks.inc({ source: r.source.name, result: r.duplicate ? "duplicate" : "accepted" });
  if (r.deliveryId) {
    d.log.info(
      { source: r.source.name, eventId: r.eventId, deliveryId: r.deliveryId, duplicate: r.duplicate },
      "webhook delivery id (unsigned), deduped on the event id",
    );
  }
  return { received: true, duplicate: r.duplicate };
}

/** A body over its source's `body_limit`, refused before it is read or as it passes the limit. */
export function tooLarge(source: Source): LonghaulError {
  return new LonghaulError(
    "PAYLOAD_TOO_LARGE",
    `Source "${source.name}" accepts bodies up to ${source.bodyLimit} bytes; this one is larger. Raise its body_limit if the sender's events are legitimately this big.`,
  );
}

/** Whether a declared `Content-Length` is over the source's limit (refused before any byte is read). */
export function declaredTooLarge(source: Source, contentLength: string | undefined): boolean {
  return contentLength !== undefined && Number(contentLength) > source.bodyLimit;
}

export interface WebhookRefusedDeps {
  refusals: WebhookRefusalStore;
  clock: Clock;
  metrics?: Metrics | undefined;
  /** The request's logger (it carries the request id). */
  log: Pick<Logger, "warn" | "error">;
}

/**
 * What either door does with a webhook of a configured source it answered with a 4xx: counts
 * it by reason, and, unless it was rate limited (the flood itself, `isRecordedRefusal`), logs
 * it at warn and counts it in its (source, code, minute) bucket. The line and the row name
 * the source, the code and the request, never the body, a header, the signature or a secret.
 * The row is written after the answer, not before it: a refusal costs the sender no wait.
 */
export function webhookRefused(
  d: WebhookRefusedDeps,
  r: { source: string; status: number; code: string; requestId: string; remoteAddress: string | null },
): void {
  d.metrics?.webhookRefusals.inc({ source: r.source, reason: r.code });
  if (!isRecordedRefusal(r.status, r.code)) return;
  d.log.warn({ source: r.source, code: r.code, status: r.status }, "webhook refused");
  d.refusals
    .recordWebhookRefusal({
      source: r.source,
      code: r.code,
      at: d.clock.now(),
      requestId: r.requestId,
      remoteAddress: r.remoteAddress,
    })
    .catch((err: unknown) =>
      d.log.error({ err, source: r.source }, "a webhook refusal could not be counted"),
    );
}
