-- A tenant's artifacts count against its storage quota with its files: their sizes are summed
-- by tenant in the transaction that stores one.
CREATE INDEX artifacts_by_tenant ON artifacts (tenant_id);
-- The maintenance sweep asks, a page of listed blob keys at a time, which ones a row names.
CREATE INDEX files_by_blob_key ON files (blob_key);
CREATE INDEX artifacts_by_blob_key ON artifacts (blob_key);
