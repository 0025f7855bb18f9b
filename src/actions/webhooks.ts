import type { Logger } from "pino";
import type { Static } from "typebox";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { Source } from "../ingress/sources.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { InboxStore } from "../store/store.ts";
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
