import { LonghaulError } from "../core/errors.ts";
import { endpointSecretAt } from "../core/sealed-at.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import type { OutboundStore, WebhookEndpointRow } from "../store/store.ts";
import { newWebhookSecret } from "./create-webhook-endpoint.ts";

/** How long the previous secret keeps signing by default: a day. */
export const DEFAULT_SECRET_OVERLAP_S = 24 * 3600;

/** WEBHOOK_ENDPOINT_NOT_FOUND for an endpoint the tenant does not have. */
export const endpointNotFound = (id: string) =>
  new LonghaulError("WEBHOOK_ENDPOINT_NOT_FOUND", `No webhook endpoint ${id} for this API key.`);

/**
 * Gives an endpoint a new signing secret, returned once. The old one keeps signing next to it
 * for `overlapS` seconds, as do earlier ones until their own expiry, so receivers can switch
 * without rejecting a delivery; 0 stops every earlier secret at once. LIMIT_REACHED when
 * `MAX_PREVIOUS_SECRETS` still sign.
 */
export async function rotateWebhookSecret(
  d: { outbound: OutboundStore; settings: OutboundSettings },
  r: { tenantId: string; endpointId: string; overlapS?: number | undefined },
): Promise<{ endpoint: WebhookEndpointRow; secret: string }> {
  const overlap = r.overlapS ?? DEFAULT_SECRET_OVERLAP_S;
  const secret = newWebhookSecret();
  const endpoint = await d.outbound.rotateWebhookEndpointSecret(
    r.tenantId,
    r.endpointId,
    d.settings.secrets.seal(secret, endpointSecretAt(r.endpointId)),
    overlap === 0 ? null : overlap * 1000,
  );
  if (!endpoint) throw endpointNotFound(r.endpointId);
  return { endpoint, secret };
}
