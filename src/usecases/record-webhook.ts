import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { bodyEventId, jsonBody } from "../ingress/scheme.ts";
import type { Source } from "../ingress/sources.ts";
import type { InboxStore } from "../store/store.ts";

/** The configured source of that name, or SOURCE_NOT_FOUND. */
export function sourceNamed(sources: ReadonlyMap<string, Source>, name: string): Source {
  const source = sources.get(name);
  if (!source) throw new LonghaulError("SOURCE_NOT_FOUND", `No webhook source "${name}" is configured.`);
  return source;
}

export interface RecordWebhookResult {
  source: Source;
  eventId: string;
  /**
   * A delivery id the sender put in a header its signature does not cover: only logged, the
   * inbox dedupes on the event id.
   */
  deliveryId: string | null;
  /** The same event was recorded before: nothing new is queued. */
  duplicate: boolean;
}

/**
 * Records a provider's webhook: verify the raw bytes with the source's scheme, require a JSON
 * body, then record the event and its `apply_event` work item in one transaction, unique by
 * (source, event id). Nothing else happens on this path (ARCHITECTURE §2): the worker applies it.
 */
export async function recordWebhook(
  d: { inbox: InboxStore; clock: Clock; sources: ReadonlyMap<string, Source> },
  w: { source: string; headers: Record<string, string | string[] | undefined>; body: Buffer },
): Promise<RecordWebhookResult> {
  const source = sourceNamed(d.sources, w.source);
  const verified = await source.verifier.verify({ headers: w.headers, body: w.body, nowMs: d.clock.now() });
  const event = verified.eventBody ?? w.body;
  const parsed = jsonBody(event);
  if (!parsed.ok) {
    if (parsed.error.code !== "INVALID_JSON") throw parsed.error;
    throw new LonghaulError(
      "INVALID_JSON",
      "The signature is valid but the body is not JSON; the sender must post a JSON event.",
    );
  }
  const eventId = verified.eventId ?? bodyEventId(w.body);
  const r = await d.inbox.recordEvent({
    source: source.name,
    provider: source.provider,
    eventId,
    body: event,
    ...(verified.bindsBody ? { bindsBody: true } : {}),
  });
  if (r.bodyDiffers) {
    throw new LonghaulError(
      "TOKEN_REPLAYED",
      "This request's token was already used for a delivery with another body; its signature covers no body, so one token is good for one delivery. A sender must mint a fresh token for each delivery; a captured token replayed with a chosen body is refused.",
      { details: { source: source.name } },
    );
  }
  return { source, eventId, deliveryId: verified.deliveryId ?? null, duplicate: r.duplicate };
}
