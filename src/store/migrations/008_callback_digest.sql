-- The SHA-256 (hex) of the raw body that completed a callback step, so the same body sent
-- again (a sender retrying) is answered as a duplicate rather than refused.
ALTER TABLE steps ADD COLUMN result_sha256 text;
