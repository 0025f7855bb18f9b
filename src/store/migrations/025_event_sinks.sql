-- Event sinks (ARCHITECTURE §4.7): a tenant's message-broker targets are rows of
-- webhook_endpoints with a kind other than 'webhook', so their deliveries are the same outbox
-- rows, retried, dead-lettered and replayed the same way. For a sink, `secret` holds the broker
-- URL (sealed when a key is set: it carries credentials) and `url` only its scheme, host and
-- port, which is what answers show.
ALTER TABLE webhook_endpoints ADD COLUMN kind text NOT NULL DEFAULT 'webhook';
-- The NATS subject prefix, RabbitMQ exchange or Redis stream; NULL for a webhook.
ALTER TABLE webhook_endpoints ADD COLUMN target text;
-- A sink's deliveries go out one task at a time, in event order: the attempt looks for an
-- earlier pending delivery of the same task.
CREATE INDEX webhook_deliveries_by_task ON webhook_deliveries (endpoint_id, task_id, event_seq);
