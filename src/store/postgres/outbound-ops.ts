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
import { advisoryLock, type Ctx } from "./db.ts";
import { complete, enqueue, fail } from "./queue-ops.ts";

/** A task event just appended, as fan-out needs it. */
export interface FannedEvent {
  tenantId: string;
  taskId: string;
  seq: number;
  type: string;
}

/**
 * In the transaction that appends the events: one delivery and one `deliver` item per
 * (event, enabled endpoint of its tenant whose filter matches), so an event committed is an
 * event delivered (ARCHITECTURE §3.1). Events of tenants without endpoints cost one indexed read.
 *
 * FOR SHARE on the endpoints: an endpoint being disabled or deleted right now is waited for
 * and then skipped, so no delivery is left pending for an endpoint that no longer takes them.
 */
export async function fanOut(c: Ctx, events: readonly FannedEvent[]): Promise<void> {
  if (events.length === 0) return;
  const endpoints = await c.sql.all<{ id: string; tenant_id: string; events: string | null }>(
    `SELECT id, tenant_id, events FROM webhook_endpoints
      WHERE tenant_id = ANY($1::text[]) AND status = 'enabled' ORDER BY id FOR SHARE`,
    [[...new Set(events.map((e) => e.tenantId))]],
  );
  if (endpoints.length === 0) return;
  const now = c.clock.now();
  const rows: { id: string; endpointId: string; event: FannedEvent }[] = [];
  for (const event of events) {
    for (const e of endpoints) {
      if (e.tenant_id !== event.tenantId || !matchesEvent(filterOf(e.events), event.type)) continue;
      rows.push({ id: c.ids.next("dl"), endpointId: e.id, event });
    }
  }
  if (rows.length === 0) return;
  await c.sql.run(
    `INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_seq, event_type, task_id, state,
       next_attempt_at, created_at, updated_at)
     SELECT d.id, d.tenant_id, d.endpoint_id, d.event_seq, d.event_type, d.task_id, 'pending', $7, $7, $7
       FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])
              AS d (id, tenant_id, endpoint_id, event_seq, event_type, task_id)`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.event.tenantId),
      rows.map((r) => r.endpointId),
      rows.map((r) => r.event.seq),
      rows.map((r) => r.event.type),
      rows.map((r) => r.event.taskId),
      now,
    ],
  );
  await enqueue(
    c,
    rows.map((r) => deliverItem(r.event.tenantId, r.id, now)),
  );
}

export async function createEndpoint(c: Ctx, e: NewWebhookEndpoint): Promise<WebhookEndpointRow> {
  if (e.maxPerTenant) {
    // Creates of one tenant queue here, so two cannot both see the last free slot.
    await advisoryLock(c, `endpoints:${e.tenantId}`);
    const row = await c.sql.get<{ n: string }>(
      "SELECT count(*) AS n FROM webhook_endpoints WHERE tenant_id = $1",
      [e.tenantId],
    );
    checkEndpointCount(Number(row!.n), e.maxPerTenant);
  }
  const now = c.clock.now();
  const row = (await c.sql.get<EndpointDbRow>(
    `INSERT INTO webhook_endpoints (id, tenant_id, url, events, secret, status, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, 'enabled', $6, $6) RETURNING *`,
    [c.ids.next("we"), e.tenantId, e.url, e.events === null ? null : json(e.events), e.secret, now],
  ))!;
  return toEndpoint(row);
}

export async function listEndpoints(c: Ctx, tenantId: string): Promise<WebhookEndpointRow[]> {
  const rows = await c.sql.all<EndpointDbRow>(
    "SELECT * FROM webhook_endpoints WHERE tenant_id = $1 ORDER BY id",
    [tenantId],
  );
  return rows.map(toEndpoint);
}

/** The tenant's endpoint, locked when the caller is about to change it or its deliveries. */
function endpointOf(c: Ctx, tenantId: string, endpointId: string, lock = false) {
  return c.sql.get<EndpointDbRow>(
    `SELECT * FROM webhook_endpoints WHERE id = $1 AND tenant_id = $2${lock ? " FOR UPDATE" : ""}`,
    [endpointId, tenantId],
  );
}

/** Drops the pending `deliver` items of an endpoint's pending deliveries. */
async function dropPendingItems(c: Ctx, endpointId: string): Promise<void> {
  await c.sql.run(
    `DELETE FROM work_items WHERE kind = 'deliver' AND status = 'pending' AND dedupe_key IN
       (SELECT 'deliver:' || id FROM webhook_deliveries WHERE endpoint_id = $1 AND state = 'pending')`,
    [endpointId],
  );
}

/** Removes the endpoint, its delivery log and its queued work. False if the tenant has no such endpoint. */
export async function deleteEndpoint(c: Ctx, tenantId: string, endpointId: string): Promise<boolean> {
  if (!(await endpointOf(c, tenantId, endpointId, true))) return false;
  await dropPendingItems(c, endpointId);
  await c.sql.run("DELETE FROM webhook_deliveries WHERE endpoint_id = $1", [endpointId]);
  await c.sql.run("DELETE FROM webhook_endpoints WHERE id = $1", [endpointId]);
  return true;
}

export async function listDeliveries(
  c: Ctx,
  tenantId: string,
  endpointId: string,
  q: { limit: number; cursor?: string | undefined; state?: DeliveryState | undefined },
): Promise<{ deliveries: WebhookDeliveryRow[]; nextCursor: string | null } | null> {
  if (!(await endpointOf(c, tenantId, endpointId))) return null;
  const params: unknown[] = [endpointId];
  const where = ["endpoint_id = $1"];
  const add = (clause: string, value: unknown) => {
    params.push(value);
    where.push(clause.replace("?", `$${params.length}`));
  };
  if (q.state) add("state = ?", q.state);
  if (q.cursor) add("id < ?", q.cursor);
  params.push(q.limit + 1);
  const rows = await c.sql.all<DeliveryDbRow>(
    `SELECT * FROM webhook_deliveries WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT $${params.length}`,
    params,
  );
  const more = rows.length > q.limit;
  const deliveries = rows.slice(0, q.limit).map(toDelivery);
  return { deliveries, nextCursor: more ? (deliveries.at(-1)?.id ?? null) : null };
}

/** WEBHOOK_ENDPOINT_NOT_FOUND, DELIVERY_NOT_FOUND, DELIVERY_NOT_REPLAYABLE. */
export async function replayDelivery(
  c: Ctx,
  tenantId: string,
  endpointId: string,
  deliveryId: string,
): Promise<WebhookDeliveryRow> {
  const endpoint = await endpointOf(c, tenantId, endpointId, true);
  if (!endpoint) {
    throw new LonghaulError(
      "WEBHOOK_ENDPOINT_NOT_FOUND",
      `No webhook endpoint ${endpointId} for this API key.`,
    );
  }
  const d = await c.sql.get<DeliveryDbRow>(
    "SELECT * FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2 FOR UPDATE",
    [deliveryId, endpointId],
  );
  if (!d) {
    throw new LonghaulError(
      "DELIVERY_NOT_FOUND",
      `No delivery ${deliveryId} for webhook endpoint ${endpointId}.`,
    );
  }
  checkReplayable(endpoint, d);
  const now = c.clock.now();
  const row = (await c.sql.get<DeliveryDbRow>(
    `UPDATE webhook_deliveries SET state = 'pending', round_attempts = 0, next_attempt_at = $1, updated_at = $1
     WHERE id = $2 RETURNING *`,
    [now, deliveryId],
  ))!;
  await enqueue(c, [deliverItem(tenantId, deliveryId, now)]);
  return toDelivery(row);
}

/** Moves the current secret to `previous_secret` (for `previousOverlapMs` from now) and stores the new one. */
export async function rotateSecret(
  c: Ctx,
  tenantId: string,
  endpointId: string,
  secret: string,
  previousOverlapMs: number | null,
): Promise<WebhookEndpointRow | null> {
  // One clock reading for both, so the window is exactly the overlap asked for.
  const now = c.clock.now();
  const previousExpiresAt = previousOverlapMs === null ? null : now + previousOverlapMs;
  const row = await c.sql.get<EndpointDbRow>(
    `UPDATE webhook_endpoints
        SET previous_secret = CASE WHEN $1::bigint IS NULL THEN NULL ELSE secret END,
            previous_secret_expires_at = $1::bigint, secret = $2, updated_at = $3
      WHERE id = $4 AND tenant_id = $5 RETURNING *`,
    [previousExpiresAt, secret, now, endpointId, tenantId],
  );
  return row ? toEndpoint(row) : null;
}

/**
 * Rewrites stored secrets as `reseal` maps them. Each update names the value it read, so
 * a secret rotated meanwhile (by another node) is left alone rather than overwritten.
 */
export async function resealSecrets(
  c: Ctx,
  reseal: (stored: string) => string,
  metaKeys: readonly string[],
): Promise<number> {
  let changed = 0;
  const rows = await c.sql.all<{ id: string; secret: string; previous_secret: string | null }>(
    "SELECT id, secret, previous_secret FROM webhook_endpoints ORDER BY id",
  );
  for (const r of rows) {
    const secret = reseal(r.secret);
    if (secret !== r.secret) {
      changed += await c.sql.run("UPDATE webhook_endpoints SET secret = $1 WHERE id = $2 AND secret = $3", [
        secret,
        r.id,
        r.secret,
      ]);
    }
    const previous = r.previous_secret === null ? null : reseal(r.previous_secret);
    if (previous !== r.previous_secret) {
      changed += await c.sql.run(
        "UPDATE webhook_endpoints SET previous_secret = $1 WHERE id = $2 AND previous_secret = $3",
        [previous, r.id, r.previous_secret],
      );
    }
  }
  for (const key of metaKeys) {
    const value = (await c.sql.get<{ value: string }>("SELECT value FROM meta WHERE key = $1", [key]))?.value;
    if (value === undefined) continue;
    const next = reseal(value);
    if (next !== value) {
      changed += await c.sql.run("UPDATE meta SET value = $1 WHERE key = $2 AND value = $3", [
        next,
        key,
        value,
      ]);
    }
  }
  return changed;
}

export async function deliveryForAttempt(c: Ctx, deliveryId: string): Promise<DeliveryAttemptInput | null> {
  const d = await c.sql.get<DeliveryDbRow>("SELECT * FROM webhook_deliveries WHERE id = $1", [deliveryId]);
  if (!d) return null;
  const e = await c.sql.get<EndpointDbRow>("SELECT * FROM webhook_endpoints WHERE id = $1", [d.endpoint_id]);
  const ev = await c.sql.get<TaskEventDbRow>("SELECT * FROM task_events WHERE seq = $1", [d.event_seq]);
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
 * other pending deliveries. A delivery deleted meanwhile only completes the item. LEASE_LOST.
 */
export async function recordAttempt(
  c: Ctx,
  lease: Lease,
  deliveryId: string,
  r: DeliveryAttemptResult,
): Promise<void> {
  const deliveryRow = (lock: boolean) =>
    c.sql.get<DeliveryDbRow>(`SELECT * FROM webhook_deliveries WHERE id = $1${lock ? " FOR UPDATE" : ""}`, [
      deliveryId,
    ]);
  // Endpoint before delivery, the order deleteEndpoint and replayDelivery lock them in.
  const known = r.outcome === "gone" ? await deliveryRow(false) : undefined;
  if (known) await c.sql.run("SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE", [known.endpoint_id]);
  const d = await deliveryRow(true);
  if (!d) {
    await complete(c, lease);
    return;
  }
  const now = c.clock.now();
  let state = attemptState(d.state, r);
  if (state === "pending" && r.outcome === "retry") {
    if ((await fail(c, lease, r.error.message, r.nextAttemptAt)) === "dead") state = "dead";
  } else {
    await complete(c, lease);
  }
  await c.sql.run(
    `UPDATE webhook_deliveries SET state = $1, attempts = attempts + 1, round_attempts = round_attempts + 1,
       last_status = $2, last_error = $3, next_attempt_at = $4, delivered_at = $5, updated_at = $6 WHERE id = $7`,
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
  if (r.outcome === "gone") await disableEndpoint(c, d.endpoint_id, r.error.message);
}

async function disableEndpoint(c: Ctx, endpointId: string, reason: string): Promise<void> {
  const now = c.clock.now();
  await c.sql.run(
    "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $1, updated_at = $2 WHERE id = $3",
    [reason, now, endpointId],
  );
  await dropPendingItems(c, endpointId);
  await c.sql.run(
    `UPDATE webhook_deliveries SET state = 'canceled', next_attempt_at = NULL, updated_at = $1
     WHERE endpoint_id = $2 AND state = 'pending'`,
    [now, endpointId],
  );
}
