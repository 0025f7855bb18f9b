-- Named artifacts tasks store with step.artifact (src/core/artifact.ts). The bytes are in the
-- blob store under blob_key, written before the row commits; one blob per row.
CREATE TABLE artifacts (
  task_id {id} NOT NULL,
  tenant_id {id} NOT NULL,
  name text NOT NULL,
  content_type text NOT NULL,
  size {bigint} NOT NULL,
  sha256 {id} NOT NULL,
  blob_key text NOT NULL,
  created_at {bigint} NOT NULL,
  PRIMARY KEY (task_id, name)
);
