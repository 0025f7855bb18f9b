-- How long after creation a job with no terminal event is polled (the reconciler).
ALTER TABLE jobs ADD COLUMN poll_after_ms {bigint};
-- The dedupe horizon: inbox rows older than it are pruned.
CREATE INDEX inbox_by_received ON inbox_events (received_at);
