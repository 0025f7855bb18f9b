-- Delivered and canceled webhook deliveries are pruned after the retention period.
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (updated_at) WHERE state IN ('delivered', 'canceled');
