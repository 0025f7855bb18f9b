-- Tenants and their API keys (stored as SHA-256 hashes only).
CREATE TABLE tenants (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  created_at  INTEGER NOT NULL
);

CREATE TABLE api_keys (
  key_hash    TEXT PRIMARY KEY,
  tenant_id   TEXT NOT NULL REFERENCES tenants(id),
  created_at  INTEGER NOT NULL,
  revoked_at  INTEGER
);

CREATE TABLE tasks (
  id                 TEXT PRIMARY KEY,
  tenant_id          TEXT NOT NULL REFERENCES tenants(id),
  type               TEXT NOT NULL,
  status             TEXT NOT NULL,
  input              TEXT NOT NULL,
  output             TEXT,
  error              TEXT,
  client_request_id  TEXT,
  user_id            TEXT,
  trace_id           TEXT,
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL
);
-- ARCHITECTURE §3.7: one task per (tenant, client_request_id).
CREATE UNIQUE INDEX tasks_client_request ON tasks (tenant_id, client_request_id) WHERE client_request_id IS NOT NULL;
CREATE INDEX tasks_by_tenant ON tasks (tenant_id, id);
CREATE INDEX tasks_by_tenant_status ON tasks (tenant_id, status, id);

-- The memo that replay reads: one row per (task, step), its outcome stored once.
CREATE TABLE steps (
  task_id      TEXT NOT NULL REFERENCES tasks(id),
  step_id      TEXT NOT NULL,
  position     INTEGER NOT NULL,
  kind         TEXT NOT NULL,
  status       TEXT NOT NULL,
  output       TEXT,
  error        TEXT,
  attempts     INTEGER NOT NULL DEFAULT 0,
  deadline_at  INTEGER,
  job_id       TEXT,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  PRIMARY KEY (task_id, step_id)
) WITHOUT ROWID;

CREATE TABLE jobs (
  id               TEXT PRIMARY KEY,
  tenant_id        TEXT NOT NULL,
  task_id          TEXT NOT NULL REFERENCES tasks(id),
  step_id          TEXT NOT NULL,
  provider         TEXT NOT NULL,
  external_id      TEXT,
  status           TEXT NOT NULL,
  input            TEXT NOT NULL,
  output           TEXT,
  error            TEXT,
  usage            TEXT,
  idempotency_key  TEXT NOT NULL UNIQUE,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
CREATE UNIQUE INDEX jobs_by_external_id ON jobs (provider, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX jobs_by_task ON jobs (task_id);

-- Verified inbound deliveries. ARCHITECTURE §3.2: unique by (source, event_id).
CREATE TABLE inbox_events (
  id               TEXT PRIMARY KEY,
  source           TEXT NOT NULL,
  provider         TEXT NOT NULL,
  event_id         TEXT NOT NULL,
  body             BLOB NOT NULL,
  status           TEXT NOT NULL,
  type             TEXT,
  job_external_id  TEXT,
  note             TEXT,
  received_at      INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
CREATE UNIQUE INDEX inbox_dedupe ON inbox_events (source, event_id);
CREATE INDEX inbox_unmatched ON inbox_events (provider, job_external_id) WHERE status = 'unmatched';

-- The durable queue.
CREATE TABLE work_items (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  kind              TEXT NOT NULL,
  tenant_id         TEXT,
  payload           TEXT NOT NULL,
  status            TEXT NOT NULL,
  run_at            INTEGER NOT NULL,
  priority          INTEGER NOT NULL DEFAULT 0,
  attempts          INTEGER NOT NULL DEFAULT 0,
  max_attempts      INTEGER NOT NULL,
  lease_owner       TEXT,
  lease_expires_at  INTEGER,
  dedupe_key        TEXT,
  concurrency_key   TEXT,
  last_error        TEXT,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL
);
CREATE INDEX work_due ON work_items (status, run_at);
-- At most one pending item per dedupe key (one pending advance per task).
CREATE UNIQUE INDEX work_dedupe ON work_items (dedupe_key) WHERE dedupe_key IS NOT NULL AND status = 'pending';
CREATE INDEX work_leased_key ON work_items (concurrency_key) WHERE status = 'leased';
CREATE INDEX work_leases ON work_items (lease_expires_at) WHERE status = 'leased';

-- The append-only log of task events, per tenant, feeding SSE and outbound webhooks.
CREATE TABLE task_events (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant_id   TEXT NOT NULL,
  task_id     TEXT NOT NULL,
  type        TEXT NOT NULL,
  data        TEXT NOT NULL,
  created_at  INTEGER NOT NULL
);
CREATE INDEX task_events_by_tenant ON task_events (tenant_id, seq);

CREATE TABLE meta (
  key    TEXT PRIMARY KEY,
  value  TEXT NOT NULL
);
