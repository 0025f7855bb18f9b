import { LonghaulError } from "../core/errors.ts";
import { endpointSecretAt } from "../core/sealed-at.ts";
import type { SinkKind } from "../core/sink-kind.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import { vetHost } from "../outbound/ssrf.ts";
import { displaySinkUrl, parseSinkUrl } from "../sinks/sink-url.ts";
import type { OutboundStore, WebhookEndpointRow } from "../store/store.ts";

/**
 * Adds an event sink (ARCHITECTURE §4.7): a broker the tenant's task events are published to
 * through the outbound outbox. The URL is parsed and its host checked against the SSRF policy
 * before anything is written; it is stored sealed (it may carry credentials) in the endpoint's
 * `secret` place, and only its scheme, host and port are shown. Shares the endpoints' cap.
 */
export async function createEventSink(
  d: { outbound: OutboundStore; settings: OutboundSettings; maxPerTenant: number },
  c: { tenantId: string; kind: SinkKind; url: string; target: string; events?: string[] | null | undefined },
): Promise<WebhookEndpointRow> {
  const url = parseSinkUrl(c.kind, c.url);
  try {
    await vetHost(url, d.settings);
  } catch (err) {
    // A name that does not resolve yet may resolve later; every attempt checks it again.
    if (err instanceof LonghaulError) throw err;
  }
  const events = c.events ? [...new Set(c.events)] : null;
  return d.outbound.createWebhookEndpoint({
    tenantId: c.tenantId,
    url: displaySinkUrl(url),
    kind: c.kind,
    target: c.target,
    events,
    secret: (id) => d.settings.secrets.seal(url.href, endpointSecretAt(id)),
    maxPerTenant: d.maxPerTenant,
  });
}
