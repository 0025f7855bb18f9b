-- Webhooks refused before they were recorded (bad signature, stale timestamp, too large, …),
-- counted per source, reason code and minute: a flood of forgeries raises a count instead of
-- adding rows. No body, header or signature is kept (src/core/webhook-refusal.ts).
CREATE TABLE webhook_refusals (
  id {id} PRIMARY KEY,
  source text NOT NULL,
  code text NOT NULL,
  minute {bigint} NOT NULL,
  count {bigint} NOT NULL,
  first_at {bigint} NOT NULL,
  last_at {bigint} NOT NULL,
  last_request_id text NOT NULL,
  last_remote_address text
);
CREATE UNIQUE INDEX webhook_refusals_bucket ON webhook_refusals (source, code, minute);
-- Pruned by age (the maintenance pass).
CREATE INDEX webhook_refusals_minute ON webhook_refusals (minute);
