-- Endpoint secret rotation: the secret replaced by a rotation keeps signing deliveries, next
-- to the new one, until previous_secret_expires_at (epoch ms). Secrets in these columns, and
-- in `secret`, are sealed (`enc:v1:…`) when an encryption key is set.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret text;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at {bigint};
