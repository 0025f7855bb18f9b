import { randomBytes } from "node:crypto";
import { LonghaulError } from "../core/errors.ts";
import { endpointSecretAt } from "../core/sealed-at.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import { vetTarget } from "../outbound/ssrf.ts";
import type { OutboundStore, WebhookEndpointRow } from "../store/store.ts";

/** A new signing secret: `whsec_` and 24 random bytes in base64, shown once. */
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString("base64")}`;

/** Refuses a URL that could never be delivered to: not http(s), credentials, or a forbidden address. */
async function checkUrl(value: string, settings: OutboundSettings): Promise<string> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new LonghaulError("VALIDATION_FAILED", `"url" is not an absolute URL: ${value.slice(0, 200)}`);
  }
  if (url.username || url.password) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      '"url" must not carry credentials; verify deliveries with the signing secret instead.',
    );
  }
  try {
    await vetTarget(url, settings);
  } catch (err) {
    // A name that does not resolve yet may resolve later; every attempt checks it again.
    if (err instanceof LonghaulError) throw err;
  }
  return url.href;
}

/**
 * Adds an outbound webhook endpoint (ARCHITECTURE §4.7): the URL is checked against the SSRF
 * policy before anything is written, the event filter is deduplicated, and the new signing
 * secret is stored sealed and returned once. The store enforces the per-tenant cap.
 */
export async function createWebhookEndpoint(
  d: { outbound: OutboundStore; settings: OutboundSettings; maxPerTenant: number },
  c: { tenantId: string; url: string; events?: string[] | null | undefined },
): Promise<{ endpoint: WebhookEndpointRow; secret: string }> {
  const url = await checkUrl(c.url, d.settings);
  const events = c.events ? [...new Set(c.events)] : null;
  const secret = newWebhookSecret();
  const endpoint = await d.outbound.createWebhookEndpoint({
    tenantId: c.tenantId,
    url,
    events,
    secret: (id) => d.settings.secrets.seal(secret, endpointSecretAt(id)),
    maxPerTenant: d.maxPerTenant,
  });
  return { endpoint, secret };
}
