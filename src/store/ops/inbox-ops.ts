import { LonghaulError } from "../../core/errors.ts";
import { applyItem } from "../../core/work-item.ts";
import { type InboxDbRow, toInbox } from "../rows.ts";
import { pageById } from "../sql/page.ts";
import type { Tx } from "../sql/tx.ts";
import type { InboxEventRow, InboxStatus, Lease, NewInboxEvent } from "../store.ts";
import { assertLease, removeItem } from "./queue-ops.ts";

/*
 * The inbox of provider events and callbacks as it is recorded, read, replayed and pruned,
 * written once for both dialects. Applying an event to its job is a job operation
 * (job-ops.ts).
 */

type InboxFields = { type?: string; jobExternalId?: string; note?: string };

/** The statement of `markInbox`. */
const inboxSql = {
  mark: `UPDATE inbox_events SET status = ?, type = COALESCE(?, type), job_external_id = COALESCE(?, job_external_id),
       note = ?, updated_at = ? WHERE id = ?`,
};

/** inboxSql.mark's parameters. */
const markParams = (now: number, id: string, status: InboxStatus, f: InboxFields) => [
  status,
  f.type ?? null,
  f.jobExternalId ?? null,
  f.note ?? null,
  now,
  id,
];

/** Sets an inbox row's status and what was learned of it. Takes no lock itself. */
export async function markInbox(tx: Tx, id: string, status: InboxStatus, fields: InboxFields): Promise<void> {
  await tx.run(inboxSql.mark, markParams(tx.clock.now(), id, status, fields));
}

/** Deletes inbox rows received before `before`. No locks, no events. */
export async function pruneInbox(tx: Tx, before: number): Promise<number> {
  return tx.run("DELETE FROM inbox_events WHERE received_at < ?", [before]);
}

/** A page of the inbox, newest first. No locks. */
export async function listInbox(
  tx: Tx,
  q: {
    source?: string | undefined;
    status?: InboxStatus | undefined;
    limit: number;
    cursor?: string | undefined;
  },
): Promise<{ events: InboxEventRow[]; nextCursor: string | null }> {
  const page = await pageById<InboxDbRow>(tx, "inbox_events", { source: q.source, status: q.status }, q);
  return { events: page.rows.map(toInbox), nextCursor: page.nextCursor };
}

/**
 * Marks an inbox row received again and queues it to be applied. Locks: the inbox row, so a
 * twin being applied meanwhile finishes first. No events. Enqueues an `apply` item.
 */
export async function replayInboxEvent(tx: Tx, id: string): Promise<InboxEventRow> {
  const row = await tx.get<{ id: string }>(`SELECT id FROM inbox_events WHERE id = ?${tx.d.forUpdate}`, [id]);
  if (!row) throw new LonghaulError("EVENT_NOT_FOUND", `No inbox event ${id}.`);
  await markInbox(tx, id, "received", { note: "replayed" });
  await tx.enqueue([applyItem(null, id)]);
  return (await getInboxEvent(tx, id))!;
}

/**
 * Records a provider event once per (source, event id); a repeat answers the first row's id,
 * and with `bindsBody` says whether its body differs from the first one's. No locks beyond
 * the unique index, no events. Enqueues an `apply` item for a new row.
 */
export async function recordEvent(
  tx: Tx,
  e: NewInboxEvent,
): Promise<{ id: string; duplicate: boolean; bodyDiffers?: boolean }> {
  const now = tx.clock.now();
  const inserted = await tx.get<{ id: string }>(
    `INSERT INTO inbox_events (id, source, provider, event_id, body, status, received_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 'received', ?, ?) ON CONFLICT (source, event_id) DO NOTHING RETURNING id`,
    [tx.ids.next("evt"), e.source, e.provider, e.eventId, e.body, now, now],
  );
  if (!inserted) {
    // The first body is read back only where it matters, so other duplicates stay as cheap.
    const existing = (await tx.get<{ id: string; body?: Uint8Array }>(
      `SELECT id${e.bindsBody ? ", body" : ""} FROM inbox_events WHERE source = ? AND event_id = ?`,
      [e.source, e.eventId],
    ))!;
    if (e.bindsBody && !e.body.equals(existing.body!)) {
      return { id: existing.id, duplicate: true, bodyDiffers: true };
    }
    return { id: existing.id, duplicate: true };
  }
  await tx.enqueue([applyItem(null, inserted.id)]);
  return { id: inserted.id, duplicate: false };
}

/** One inbox row. No locks. */
export async function getInboxEvent(tx: Tx, id: string): Promise<InboxEventRow | null> {
  const r = await tx.get<InboxDbRow>("SELECT * FROM inbox_events WHERE id = ?", [id]);
  return r ? toInbox(r) : null;
}

/**
 * Finishes an event of a source that confirms with its provider (`confirm_with_provider`):
 * the row is marked ignored, with the job it names and what the provider said, and the
 * provider's answer, when it names a state, is recorded as the reconciler's event would be,
 * so its own apply item moves the job (a duplicate of an answer already recorded changes
 * nothing). Locks: the lease's item (completed). No events.
 */
export async function recordConfirmation(
  tx: Tx,
  lease: Lease,
  inboxId: string,
  seen: { type: string; jobExternalId: string; note: string },
  answer: NewInboxEvent | null,
): Promise<void> {
  await assertLease(tx, lease);
  await removeItem(tx, lease);
  await markInbox(tx, inboxId, "ignored", seen);
  if (answer) await recordEvent(tx, answer);
}

/**
 * An inbox row that cannot be applied: marked invalid with why. Locks: the lease's item
 * (completed). No events, nothing enqueued.
 */
export async function rejectInboxEvent(tx: Tx, lease: Lease, inboxId: string, note: string): Promise<void> {
  await assertLease(tx, lease);
  await removeItem(tx, lease);
  await markInbox(tx, inboxId, "invalid", { note });
}
