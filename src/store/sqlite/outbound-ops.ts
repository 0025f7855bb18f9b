import { LonghaulError } from "../../core/errors.ts";
import { matchesEvent } from "../../core/event-filter.ts";
import { attemptState, checkEndpointCount, checkReplayable } from "../delivery-rules.ts";
import { json } from "../json.ts";
import {
  type DeliveryDbRow,
  type EndpointDbRow,
  filterOf,
  type TaskEventDbRow,
  toDelivery,
  toEndpoint,
  toEndpointWithSecrets,
  toTaskEvent,
} from "../rows.ts";
import type {
  DeliveryAttemptInput,
  DeliveryAttemptResult,
  DeliveryState,
  Lease,
  NewWebhookEndpoint,
  WebhookDeliveryRow,
  WebhookEndpointRow,
} from "../store.ts";
import { deliverItem } from "../work-items.ts";
import type { Ctx } from "./db.ts";
import { complete, enqueue, fail } from "./queue-ops.ts";

/**
 * In the transaction that appends task event `seq`: one delivery and one `deliver` item per
 * enabled endpoint of the tenant whose filter matches, so an event committed is an event
 * delivered (ARCHITECTURE §3.1). An event of a tenant without endpoints costs one indexed read.
 */
export function fanOut(c: Ctx, tenantId: string, taskId: string, seq: number, type: string): void {
  const endpoints = c.sql.all<{ id: string; events: string | null }>(
    "SELECT id, events FROM webhook_endpoints WHERE tenant_id = ? AND status = 'enabled'",
    tenantId,
  );
  if (endpoints.length === 0) return;
  const now = c.clock.now();
  for (const e of endpoints) {
    if (!matchesEvent(filterOf(e.events), type)) continue;
    const id = c.ids.next("dl");
    c.sql.run(
      `INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_seq, event_type, task_id, state,
         next_attempt_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
      id,
      tenantId,
      e.id,
      seq,
      type,
      taskId,
      now,
      now,
      now,
    );
    enqueue(c, [deliverItem(tenantId, id, now)]);
    c.queuedDeliveries = true;
  }
}

export function createEndpoint(c: Ctx, e: NewWebhookEndpoint): WebhookEndpointRow {
  if (e.maxPerTenant) {
    const n = c.sql.get<{ n: number }>(
      "SELECT count(*) AS n FROM webhook_endpoints WHERE tenant_id = ?",
      e.tenantId,
    )!.n;
    checkEndpointCount(n, e.maxPerTenant);
  }
  const now = c.clock.now();
  const row = c.sql.get<EndpointDbRow>(
    `INSERT INTO webhook_endpoints (id, tenant_id, url, events, secret, status, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 'enabled', ?, ?) RETURNING *`,
    c.ids.next("we"),
    e.tenantId,
    e.url,
    e.events === null ? null : json(e.events),
    e.secret,
    now,
    now,
  )!;
  return toEndpoint(row);
}

export function listEndpoints(c: Ctx, tenantId: string): WebhookEndpointRow[] {
  return c.sql
    .all<EndpointDbRow>("SELECT * FROM webhook_endpoints WHERE tenant_id = ? ORDER BY id", tenantId)
    .map(toEndpoint);
}

function endpointOf(c: Ctx, tenantId: string, endpointId: string): EndpointDbRow | undefined {
  return c.sql.get<EndpointDbRow>(
    "SELECT * FROM webhook_endpoints WHERE id = ? AND tenant_id = ?",
    endpointId,
    tenantId,
  );
}

/** Moves the current secret to `previous_secret` (until `previousExpiresAt`) and stores the new one. */
export function rotateSecret(
  c: Ctx,
  tenantId: string,
  endpointId: string,
  secret: string,
  previousOverlapMs: number | null,
): WebhookEndpointRow | null {
  // One clock reading for both, so the window is exactly the overlap asked for.
  const now = c.clock.now();
  const previousExpiresAt = previousOverlapMs === null ? null : now + previousOverlapMs;
  const row = c.sql.get<EndpointDbRow>(
    `UPDATE webhook_endpoints
        SET previous_secret = CASE WHEN ? IS NULL THEN NULL ELSE secret END,
            previous_secret_expires_at = ?, secret = ?, updated_at = ?
      WHERE id = ? AND tenant_id = ? RETURNING *`,
    previousExpiresAt,
    previousExpiresAt,
    secret,
    now,
    endpointId,
    tenantId,
  );
  return row ? toEndpoint(row) : null;
}

/**
 * Rewrites stored secrets as `reseal` maps them. Each update names the value it read, so
 * a secret rotated meanwhile is left alone rather than overwritten with an older one.
 */
export function resealSecrets(
  c: Ctx,
  reseal: (stored: string) => string,
  metaKeys: readonly string[],
): number {
  let changed = 0;
  const rows = c.sql.all<{ id: string; secret: string; previous_secret: string | null }>(
    "SELECT id, secret, previous_secret FROM webhook_endpoints",
  );
  for (const r of rows) {
    const secret = reseal(r.secret);
    if (secret !== r.secret) {
      changed += c.sql.run(
        "UPDATE webhook_endpoints SET secret = ? WHERE id = ? AND secret = ?",
        secret,
        r.id,
        r.secret,
      ).changes;
    }
    const previous = r.previous_secret === null ? null : reseal(r.previous_secret);
    if (previous !== r.previous_secret) {
      changed += c.sql.run(
        "UPDATE webhook_endpoints SET previous_secret = ? WHERE id = ? AND previous_secret = ?",
        previous,
        r.id,
        r.previous_secret,
      ).changes;
    }
  }
  for (const key of metaKeys) {
    const value = c.sql.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", key)?.value;
    if (value === undefined) continue;
    const next = reseal(value);
    if (next !== value) {
      changed += c.sql.run("UPDATE meta SET value = ? WHERE key = ? AND value = ?", next, key, value).changes;
    }
  }
  return changed;
}

/** Drops the pending `deliver` items of an endpoint's deliveries in `states`. */
function dropPendingItems(c: Ctx, endpointId: string, states: string): void {
  c.sql.run(
    `DELETE FROM work_items WHERE kind = 'deliver' AND status = 'pending' AND dedupe_key IN
       (SELECT 'deliver:' || id FROM webhook_deliveries WHERE endpoint_id = ? AND state IN (${states}))`,
    endpointId,
  );
}

/** Removes the endpoint, its delivery log and its queued work. False if the tenant has no such endpoint. */
export function deleteEndpoint(c: Ctx, tenantId: string, endpointId: string): boolean {
  if (!endpointOf(c, tenantId, endpointId)) return false;
  dropPendingItems(c, endpointId, "'pending'");
  c.sql.run("DELETE FROM webhook_deliveries WHERE endpoint_id = ?", endpointId);
  c.sql.run("DELETE FROM webhook_endpoints WHERE id = ?", endpointId);
  return true;
}

export function listDeliveries(
  c: Ctx,
  tenantId: string,
  endpointId: string,
  q: { limit: number; cursor?: string | undefined; state?: DeliveryState | undefined },
): { deliveries: WebhookDeliveryRow[]; nextCursor: string | null } | null {
  if (!endpointOf(c, tenantId, endpointId)) return null;
  const where = ["endpoint_id = ?"];
  const params: unknown[] = [endpointId];
  if (q.state) {
    where.push("state = ?");
    params.push(q.state);
  }
  if (q.cursor) {
    where.push("id < ?");
    params.push(q.cursor);
  }
  const rows = c.sql.all<DeliveryDbRow>(
    `SELECT * FROM webhook_deliveries WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT ?`,
    ...params,
    q.limit + 1,
  );
  const more = rows.length > q.limit;
  const deliveries = rows.slice(0, q.limit).map(toDelivery);
  return { deliveries, nextCursor: more ? (deliveries.at(-1)?.id ?? null) : null };
}

export function replayDelivery(
  c: Ctx,
  tenantId: string,
  endpointId: string,
  deliveryId: string,
): WebhookDeliveryRow {
  const endpoint = endpointOf(c, tenantId, endpointId);
  if (!endpoint) {
    throw new LonghaulError(
      "WEBHOOK_ENDPOINT_NOT_FOUND",
      `No webhook endpoint ${endpointId} for this API key.`,
    );
  }
  const d = c.sql.get<DeliveryDbRow>(
    "SELECT * FROM webhook_deliveries WHERE id = ? AND endpoint_id = ?",
    deliveryId,
    endpointId,
  );
  if (!d) {
    throw new LonghaulError(
      "DELIVERY_NOT_FOUND",
      `No delivery ${deliveryId} for webhook endpoint ${endpointId}.`,
    );
  }
  checkReplayable(endpoint, d);
  const now = c.clock.now();
  const row = c.sql.get<DeliveryDbRow>(
    `UPDATE webhook_deliveries SET state = 'pending', round_attempts = 0, next_attempt_at = ?, updated_at = ?
     WHERE id = ? RETURNING *`,
    now,
    now,
    deliveryId,
  )!;
  enqueue(c, [deliverItem(tenantId, deliveryId, now)]);
  return toDelivery(row);
}

export function deliveryForAttempt(c: Ctx, deliveryId: string): DeliveryAttemptInput | null {
  const d = c.sql.get<DeliveryDbRow>("SELECT * FROM webhook_deliveries WHERE id = ?", deliveryId);
  if (!d) return null;
  const e = c.sql.get<EndpointDbRow>("SELECT * FROM webhook_endpoints WHERE id = ?", d.endpoint_id);
  const ev = c.sql.get<TaskEventDbRow>("SELECT * FROM task_events WHERE seq = ?", d.event_seq);
  if (!e || !ev) return null;
  return {
    delivery: toDelivery(d),
    endpoint: toEndpointWithSecrets(e, c.clock.now()),
    event: toTaskEvent(ev),
  };
}

/**
 * Records one attempt and settles its work item in the same transaction: rescheduled for a
 * retry, completed otherwise. A `gone` answer (410) disables the endpoint and cancels its
 * other pending deliveries. A delivery deleted meanwhile only completes the item.
 */
export function recordAttempt(c: Ctx, lease: Lease, deliveryId: string, r: DeliveryAttemptResult): void {
  const d = c.sql.get<DeliveryDbRow>("SELECT * FROM webhook_deliveries WHERE id = ?", deliveryId);
  if (!d) {
    complete(c, lease);
    return;
  }
  const now = c.clock.now();
  let state = attemptState(d.state, r);
  if (state === "pending" && r.outcome === "retry") {
    if (fail(c, lease, r.error.message, r.nextAttemptAt) === "dead") state = "dead";
  } else {
    complete(c, lease);
  }
  c.sql.run(
    `UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, round_attempts = round_attempts + 1,
       last_status = ?, last_error = ?, next_attempt_at = ?, delivered_at = ?, updated_at = ? WHERE id = ?`,
    state,
    r.status,
    r.outcome === "delivered" ? null : json(r.error),
    state === "pending" && r.outcome === "retry" ? r.nextAttemptAt : null,
    state === "delivered" ? now : null,
    now,
    deliveryId,
  );
  if (r.outcome === "gone") disableEndpoint(c, d.endpoint_id, r.error.message);
}

function disableEndpoint(c: Ctx, endpointId: string, reason: string): void {
  const now = c.clock.now();
  c.sql.run(
    "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = ?, updated_at = ? WHERE id = ?",
    reason,
    now,
    endpointId,
  );
  dropPendingItems(c, endpointId, "'pending'");
  c.sql.run(
    `UPDATE webhook_deliveries SET state = 'canceled', next_attempt_at = NULL, updated_at = ?
     WHERE endpoint_id = ? AND state = 'pending'`,
    now,
    endpointId,
  );
}
