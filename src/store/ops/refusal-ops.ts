import { refusalMinute, type WebhookRefusal, type WebhookRefusalRow } from "../../core/webhook-refusal.ts";
import { pageById } from "../sql/page.ts";
import type { Tx } from "../sql/tx.ts";

/*
 * Refused webhooks, counted per (source, code, minute) bucket, written once for both
 * dialects (src/core/webhook-refusal.ts).
 */

interface RefusalDbRow {
  id: string;
  source: string;
  code: string;
  minute: number;
  count: number;
  first_at: number;
  last_at: number;
  last_request_id: string;
  last_remote_address: string | null;
}

const toRefusal = (r: RefusalDbRow): WebhookRefusalRow => ({
  id: r.id,
  source: r.source,
  code: r.code,
  minute: Number(r.minute),
  count: Number(r.count),
  firstAt: Number(r.first_at),
  lastAt: Number(r.last_at),
  lastRequestId: r.last_request_id,
  lastRemoteAddress: r.last_remote_address,
});

/**
 * Counts one refusal in its bucket: inserts the bucket or raises its count and keeps the last
 * request's id and address. One statement; no locks beyond the bucket's unique index, no
 * events, no work.
 */
export async function recordWebhookRefusal(tx: Tx, r: WebhookRefusal): Promise<void> {
  await tx.run(
    `INSERT INTO webhook_refusals (id, source, code, minute, count, first_at, last_at, last_request_id, last_remote_address)
     VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)
     ON CONFLICT (source, code, minute) DO UPDATE SET
       count = webhook_refusals.count + 1,
       first_at = ${tx.d.least}(webhook_refusals.first_at, excluded.first_at),
       last_at = ${tx.d.greatest}(webhook_refusals.last_at, excluded.last_at),
       last_request_id = excluded.last_request_id,
       last_remote_address = excluded.last_remote_address`,
    [tx.ids.next("wr"), r.source, r.code, refusalMinute(r.at), r.at, r.at, r.requestId, r.remoteAddress],
  );
}

/** A page of refusal buckets, newest first, of one source or all. No locks. */
export async function listWebhookRefusals(
  tx: Tx,
  q: { source?: string | undefined; limit: number; cursor?: string | undefined },
): Promise<{ refusals: WebhookRefusalRow[]; nextCursor: string | null }> {
  const page = await pageById<RefusalDbRow>(tx, "webhook_refusals", { source: q.source }, q);
  return { refusals: page.rows.map(toRefusal), nextCursor: page.nextCursor };
}

/** Deletes the buckets of minutes before `before`. Returns how many. No locks, no events. */
export async function pruneWebhookRefusals(tx: Tx, before: number): Promise<number> {
  return tx.run("DELETE FROM webhook_refusals WHERE minute < ?", [before]);
}
