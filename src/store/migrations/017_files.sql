-- Files a tenant uploaded (src/core/file.ts). The bytes are in the blob store under
-- blob_key, written before the row commits; one blob per row.
CREATE TABLE files (
  id {id} PRIMARY KEY,
  tenant_id {id} NOT NULL,
  filename text,
  content_type text NOT NULL,
  size {bigint} NOT NULL,
  sha256 {id} NOT NULL,
  blob_key text NOT NULL,
  created_at {bigint} NOT NULL
);
-- Deduplication by content within a tenant: a second upload of the same bytes answers the first.
CREATE UNIQUE INDEX files_by_tenant_sha256 ON files (tenant_id, sha256);
-- A tenant's files, newest first (the list's pages).
CREATE INDEX files_by_tenant ON files (tenant_id, id);
