import { attemptState, checkEndpointCount, checkReplayable, SINK_TURN_WAIT_MS } from "../../core/delivery.ts";
import { rotatedSecrets } from "../../core/endpoint-secrets.ts";
import { LonghaulError } from "../../core/errors.ts";
import { deliverItem } from "../../core/work-item.ts";
import { json } from "../json.ts";
import {
  type DeliveryDbRow,
  type EndpointDbRow,
  previousSecretsJson,
  previousSecretsOf,
  type TaskEventDbRow,
  toDelivery,
  toEndpoint,
  toEndpointWithSecrets,
  toTaskEvent,
} from "../rows.ts";
import { pageById } from "../sql/page.ts";
import type { Tx } from "../sql/tx.ts";
import type {
  DeliveryAttemptInput,
  DeliveryAttemptResult,
  DeliveryState,
  EndpointScope,
  Lease,
  NewWebhookEndpoint,
  WebhookDeliveryRow,
  WebhookEndpointRow,
} from "../store.ts";
import { complete, deferUncounted, fail } from "./queue-ops.ts";

/** The condition that keeps webhook endpoints and event sinks apart: each route sees its own. */
const inScope = (scope: EndpointScope) => (scope === "sinks" ? "kind <> 'webhook'" : "kind = 'webhook'");

/*
 * Outbound webhooks: endpoints, their delivery log, delivery attempts and the retention of
 * finished deliveries, written once for both dialects. No operation here emits task events. Row locks are PostgreSQL's
 * (`tx.d.forUpdate`), always endpoint before delivery, the order fan-out's FOR SHARE takes
 * them in; SQLite's single writer needs none. The fan-out of new task events to deliveries
 * is in fan-out.ts.
 */

/**
 * Adds an endpoint, enabled. Locks `endpoints:<tenant>` when a per-tenant maximum applies, so
 * two creates cannot both take the last place. No events, nothing enqueued. LIMIT_REACHED.
 */
export async function createEndpoint(tx: Tx, e: NewWebhookEndpoint): Promise<WebhookEndpointRow> {
  if (e.maxPerTenant) {
    // Creates of one tenant queue here, so two cannot both see the last free slot.
    await tx.lock(`endpoints:${e.tenantId}`);
    const row = await tx.get<{ n: number | string }>(
      // Webhooks and sinks share the cap: both are outbound targets the tenant's events fan out to.
      "SELECT count(*) AS n FROM webhook_endpoints WHERE tenant_id = ?",
      [e.tenantId],
    );
    checkEndpointCount(Number(row!.n), e.maxPerTenant);
  }
  const now = tx.clock.now();
  const id = tx.ids.next("we");
  const secret = typeof e.secret === "function" ? e.secret(id) : e.secret;
  const row = (await tx.get<EndpointDbRow>(
    `INSERT INTO webhook_endpoints (id, tenant_id, url, kind, target, events, secret, status, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, 'enabled', ?, ?) RETURNING *`,
    [
      id,
      e.tenantId,
      e.url,
      e.kind ?? "webhook",
      e.target ?? null,
      e.events === null ? null : json(e.events),
      secret,
      now,
      now,
    ],
  ))!;
  return toEndpoint(row);
}

/** Reads only; no locks. */
export async function listEndpoints(
  tx: Tx,
  tenantId: string,
  scope: EndpointScope = "webhooks",
): Promise<WebhookEndpointRow[]> {
  const rows = await tx.all<EndpointDbRow>(
    `SELECT * FROM webhook_endpoints WHERE tenant_id = ? AND ${inScope(scope)} ORDER BY id`,
    [tenantId],
  );
  return rows.map(toEndpoint);
}

/** The tenant's endpoint, locked when the caller is about to change it or its deliveries. */
function endpointOf(
  tx: Tx,
  tenantId: string,
  endpointId: string,
  lock = false,
  scope: EndpointScope = "webhooks",
) {
  return tx.get<EndpointDbRow>(
    `SELECT * FROM webhook_endpoints WHERE id = ? AND tenant_id = ? AND ${inScope(scope)}${lock ? tx.d.forUpdate : ""}`,
    [endpointId, tenantId],
  );
}

/** Drops the pending `deliver` items of an endpoint's pending deliveries. */
async function dropPendingItems(tx: Tx, endpointId: string): Promise<void> {
  await tx.run(
    `DELETE FROM work_items WHERE kind = 'deliver' AND status = 'pending' AND dedupe_key IN
       (SELECT 'deliver:' || id FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'pending')`,
    [endpointId],
  );
}

/**
 * Removes the endpoint, its delivery log and its queued `deliver` items. False if the tenant
 * has no such endpoint. Locks the endpoint row (FOR UPDATE). No events, nothing enqueued.
 */
export async function deleteEndpoint(
  tx: Tx,
  tenantId: string,
  endpointId: string,
  scope: EndpointScope = "webhooks",
): Promise<boolean> {
  if (!(await endpointOf(tx, tenantId, endpointId, true, scope))) return false;
  await dropPendingItems(tx, endpointId);
  await tx.run("DELETE FROM webhook_deliveries WHERE endpoint_id = ?", [endpointId]);
  await tx.run("DELETE FROM webhook_endpoints WHERE id = ?", [endpointId]);
  return true;
}

/** One page of an endpoint's deliveries, newest first; null if the tenant has no such endpoint. No locks. */
export async function listDeliveries(
  tx: Tx,
  tenantId: string,
  endpointId: string,
  q: { limit: number; cursor?: string | undefined; state?: DeliveryState | undefined },
  scope: EndpointScope = "webhooks",
): Promise<{ deliveries: WebhookDeliveryRow[]; nextCursor: string | null } | null> {
  if (!(await endpointOf(tx, tenantId, endpointId, false, scope))) return null;
  const page = await pageById<DeliveryDbRow>(
    tx,
    "webhook_deliveries",
    { endpoint_id: endpointId, state: q.state },
    q,
  );
  return { deliveries: page.rows.map(toDelivery), nextCursor: page.nextCursor };
}

/**
 * Makes a delivery pending again for a new round of attempts. Locks the endpoint row, then
 * the delivery's (FOR UPDATE); enqueues one `deliver` item (the commit wakes the workers).
 * No events. WEBHOOK_ENDPOINT_NOT_FOUND, DELIVERY_NOT_FOUND, DELIVERY_NOT_REPLAYABLE.
 */
export async function replayDelivery(
  tx: Tx,
  tenantId: string,
  endpointId: string,
  deliveryId: string,
  scope: EndpointScope = "webhooks",
): Promise<WebhookDeliveryRow> {
  const endpoint = await endpointOf(tx, tenantId, endpointId, true, scope);
  if (!endpoint) {
    throw scope === "sinks"
      ? new LonghaulError("EVENT_SINK_NOT_FOUND", `No event sink ${endpointId} for this API key.`)
      : new LonghaulError(
          "WEBHOOK_ENDPOINT_NOT_FOUND",
          `No webhook endpoint ${endpointId} for this API key.`,
        );
  }
  const d = await tx.get<DeliveryDbRow>(
    `SELECT * FROM webhook_deliveries WHERE id = ? AND endpoint_id = ?${tx.d.forUpdate}`,
    [deliveryId, endpointId],
  );
  if (!d) {
    throw new LonghaulError(
      "DELIVERY_NOT_FOUND",
      `No delivery ${deliveryId} for webhook endpoint ${endpointId}.`,
    );
  }
  checkReplayable(endpoint, d);
  const now = tx.clock.now();
  const row = (await tx.get<DeliveryDbRow>(
    `UPDATE webhook_deliveries SET state = 'pending', round_attempts = 0, next_attempt_at = ?, updated_at = ?
     WHERE id = ? RETURNING *`,
    [now, now, deliveryId],
  ))!;
  await tx.enqueue([deliverItem(tenantId, deliveryId, now)]);
  return toDelivery(row);
}

/**
 * Stores `secret` as the endpoint's current secret and adds the one it replaces to the
 * previous ones, signing for `previousOverlapMs` more (null: none of them signs any more;
 * expired ones are dropped). Locks the endpoint row (FOR UPDATE): two rotations at once each
 * keep what the other added. The replaced secret moves unopened: it keeps its place
 * (src/core/sealed-at.ts). No events, nothing enqueued. LIMIT_REACHED.
 */
export async function rotateSecret(
  tx: Tx,
  tenantId: string,
  endpointId: string,
  secret: string,
  previousOverlapMs: number | null,
): Promise<WebhookEndpointRow | null> {
  const current = await endpointOf(tx, tenantId, endpointId, true);
  if (!current) return null;
  // One clock reading for both, so the window is exactly the overlap asked for.
  const now = tx.clock.now();
  const previous = rotatedSecrets(
    endpointId,
    previousSecretsOf(current),
    current.secret,
    now,
    previousOverlapMs,
  );
  const row = (await tx.get<EndpointDbRow>(
    "UPDATE webhook_endpoints SET secret = ?, previous_secrets = ?, updated_at = ? WHERE id = ? RETURNING *",
    [secret, previousSecretsJson(previous), now, endpointId],
  ))!;
  return toEndpoint(row);
}

/** What a delivery attempt needs: the delivery, its endpoint with secrets, its event. Reads only. */
export async function deliveryForAttempt(tx: Tx, deliveryId: string): Promise<DeliveryAttemptInput | null> {
  const d = await tx.get<DeliveryDbRow>("SELECT * FROM webhook_deliveries WHERE id = ?", [deliveryId]);
  if (!d) return null;
  const e = await tx.get<EndpointDbRow>("SELECT * FROM webhook_endpoints WHERE id = ?", [d.endpoint_id]);
  const ev = await tx.get<TaskEventDbRow>("SELECT * FROM task_events WHERE seq = ?", [d.event_seq]);
  if (!e || !ev) return null;
  return {
    delivery: toDelivery(d),
    endpoint: toEndpointWithSecrets(e, tx.clock.now()),
    event: toTaskEvent(ev),
  };
}

/**
 * When an earlier delivery of the delivery's endpoint and task is pending, when to look again:
 * its next attempt, and never sooner than SINK_TURN_WAIT_MS from now (it may be in flight);
 * null when none is. Reads only.
 */
export async function earlierPending(tx: Tx, deliveryId: string): Promise<number | null> {
  const row = await tx.get<{ next_attempt_at: number | string | null }>(
    `SELECT e.next_attempt_at FROM webhook_deliveries d
       JOIN webhook_deliveries e ON e.endpoint_id = d.endpoint_id AND e.task_id = d.task_id
        AND e.event_seq < d.event_seq AND e.state = 'pending'
     WHERE d.id = ? ORDER BY e.event_seq LIMIT 1`,
    [deliveryId],
  );
  if (!row) return null;
  return Math.max(tx.clock.now() + SINK_TURN_WAIT_MS, Number(row.next_attempt_at ?? 0));
}

/** Puts a delivery's leased work item back until `runAt`, its attempts uncounted. No events. LEASE_LOST. */
export async function deferDelivery(tx: Tx, lease: Lease, runAt: number): Promise<void> {
  await deferUncounted(tx, lease, runAt, "waiting for an earlier event of the same task");
}

/**
 * Records one attempt and settles its work item in the same transaction: rescheduled for a
 * retry, completed otherwise. A `gone` answer (410) disables the endpoint and cancels its
 * other pending deliveries. A delivery deleted meanwhile only completes the item. Locks the
 * endpoint (on `gone`) then the delivery (FOR UPDATE); a retry requeues the leased item (the
 * commit wakes the workers); no events. LEASE_LOST.
 */
export async function recordAttempt(
  tx: Tx,
  lease: Lease,
  deliveryId: string,
  r: DeliveryAttemptResult,
): Promise<void> {
  const deliveryRow = (lock: boolean) =>
    tx.get<DeliveryDbRow>(`SELECT * FROM webhook_deliveries WHERE id = ?${lock ? tx.d.forUpdate : ""}`, [
      deliveryId,
    ]);
  // Endpoint before delivery, the order deleteEndpoint and replayDelivery lock them in.
  const known = r.outcome === "gone" ? await deliveryRow(false) : undefined;
  if (known)
    await tx.get(`SELECT 1 FROM webhook_endpoints WHERE id = ?${tx.d.forUpdate}`, [known.endpoint_id]);
  const d = await deliveryRow(true);
  if (!d) {
    await complete(tx, lease);
    return;
  }
  const now = tx.clock.now();
  let state = attemptState(d.state, r);
  if (state === "pending" && r.outcome === "retry") {
    if ((await fail(tx, lease, r.error.message, r.nextAttemptAt)) === "dead") state = "dead";
  } else {
    await complete(tx, lease);
  }
  await tx.run(
    `UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, round_attempts = round_attempts + 1,
       last_status = ?, last_error = ?, next_attempt_at = ?, delivered_at = ?, updated_at = ? WHERE id = ?`,
    [
      state,
      r.status,
      r.outcome === "delivered" ? null : json(r.error),
      state === "pending" && r.outcome === "retry" ? r.nextAttemptAt : null,
      state === "delivered" ? now : null,
      now,
      deliveryId,
    ],
  );
  if (r.outcome === "gone") await disableEndpoint(tx, d.endpoint_id, r.error.message);
}

async function disableEndpoint(tx: Tx, endpointId: string, reason: string): Promise<void> {
  const now = tx.clock.now();
  await tx.run(
    "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = ?, updated_at = ? WHERE id = ?",
    [reason, now, endpointId],
  );
  await dropPendingItems(tx, endpointId);
  await tx.run(
    `UPDATE webhook_deliveries SET state = 'canceled', next_attempt_at = NULL, updated_at = ?
     WHERE endpoint_id = ? AND state = 'pending'`,
    [now, endpointId],
  );
}

/** Deletes delivered and canceled outbound deliveries last changed before `before`. No locks, no events. */
export async function pruneDeliveries(tx: Tx, before: number): Promise<number> {
  return tx.run(
    "DELETE FROM webhook_deliveries WHERE state IN ('delivered', 'canceled') AND updated_at < ?",
    [before],
  );
}
