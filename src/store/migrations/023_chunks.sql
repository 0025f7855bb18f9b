-- Chunks of tasks' documents, indexed for `POST /v1/search` (src/core/chunk.ts). `seq` orders
-- the rows for the exact vector scan's pages and is the full-text index's row id. `embedding`
-- is little-endian float32, `dims` of them, made by `embedder`: a search compares only the
-- vectors of its own embedder. A task's chunks are replaced whole in one transaction.
CREATE TABLE chunks (
  seq {serial},
  tenant_id {id} NOT NULL,
  id {id} NOT NULL,
  task_id {id} NOT NULL,
  task_type text NOT NULL,
  file_id {id},
  ordinal {int} NOT NULL,
  line_start {int},
  line_end {int},
  page {int},
  text text NOT NULL,
  metadata text NOT NULL,
  embedder text NOT NULL,
  dims {int} NOT NULL,
  embedding {bytes} NOT NULL,
  created_at {bigint} NOT NULL
);
CREATE UNIQUE INDEX chunks_by_tenant_id ON chunks (tenant_id, id);
-- The tenant's scan, in pages by seq.
CREATE INDEX chunks_by_tenant_seq ON chunks (tenant_id, seq);
-- A task's chunks replaced, a file's removed with it.
CREATE INDEX chunks_by_task ON chunks (task_id);
CREATE INDEX chunks_by_tenant_file ON chunks (tenant_id, file_id);
-- Keyword search. SQLite: an FTS5 index over `text` and `tenant_id` whose content is the chunks
-- table itself, kept in step by triggers; a search matches the tenant's id as a phrase in the
-- same query, so the index narrows to the tenant rather than a join after it. PostgreSQL: a
-- generated tsvector with a GIN index. Both tokenize without stemming ('simple', unicode61),
-- so every language is searched the same way.
--sqlite: CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tenant_id, content='chunks', content_rowid='seq', tokenize='unicode61 remove_diacritics 2');
--sqlite: CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
--sqlite:   INSERT INTO chunks_fts (rowid, text, tenant_id) VALUES (new.seq, new.text, new.tenant_id);
--sqlite: END;
--sqlite: CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
--sqlite:   INSERT INTO chunks_fts (chunks_fts, rowid, text, tenant_id) VALUES ('delete', old.seq, old.text, old.tenant_id);
--sqlite: END;
--postgres: ALTER TABLE chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED;
--postgres: CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
