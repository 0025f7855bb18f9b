-- Times are milliseconds since the epoch (bigint); JSON values are stored as text, exactly as
-- written, so the store returns what it was given. Ids and keys that are ordered or compared
-- use the "C" collation: byte order, as in SQLite.

-- Tenants and their API keys (stored as SHA-256 hashes only).
CREATE TABLE tenants (
  id          text COLLATE "C" PRIMARY KEY,
  name        text NOT NULL,
  created_at  bigint NOT NULL
);

CREATE TABLE api_keys (
  key_hash    text COLLATE "C" PRIMARY KEY,
  tenant_id   text COLLATE "C" NOT NULL REFERENCES tenants (id),
  created_at  bigint NOT NULL,
  revoked_at  bigint
);

CREATE TABLE tasks (
  id                 text COLLATE "C" PRIMARY KEY,
  tenant_id          text COLLATE "C" NOT NULL REFERENCES tenants (id),
  type               text NOT NULL,
  status             text NOT NULL,
  input              text NOT NULL,
  output             text,
  error              text,
  client_request_id  text COLLATE "C",
  user_id            text,
  trace_id           text,
  created_at         bigint NOT NULL,
  updated_at         bigint NOT NULL
);
-- ARCHITECTURE §3.7: one task per (tenant, client_request_id). Concurrent submits meet here.
CREATE UNIQUE INDEX tasks_client_request ON tasks (tenant_id, client_request_id) WHERE client_request_id IS NOT NULL;
CREATE INDEX tasks_by_tenant ON tasks (tenant_id, id);
CREATE INDEX tasks_by_tenant_status ON tasks (tenant_id, status, id);

-- The memo that replay reads: one row per (task, step), its outcome stored once.
CREATE TABLE steps (
  task_id      text COLLATE "C" NOT NULL REFERENCES tasks (id),
  step_id      text COLLATE "C" NOT NULL,
  position     integer NOT NULL,
  kind         text NOT NULL,
  status       text NOT NULL,
  output       text,
  error        text,
  attempts     integer NOT NULL DEFAULT 0,
  deadline_at  bigint,
  job_id       text COLLATE "C",
  created_at   bigint NOT NULL,
  updated_at   bigint NOT NULL,
  PRIMARY KEY (task_id, step_id)
);

CREATE TABLE jobs (
  id               text COLLATE "C" PRIMARY KEY,
  tenant_id        text COLLATE "C" NOT NULL,
  task_id          text COLLATE "C" NOT NULL REFERENCES tasks (id),
  step_id          text COLLATE "C" NOT NULL,
  provider         text COLLATE "C" NOT NULL,
  external_id      text COLLATE "C",
  status           text NOT NULL,
  input            text NOT NULL,
  output           text,
  error            text,
  usage            text,
  idempotency_key  text COLLATE "C" NOT NULL UNIQUE,
  created_at       bigint NOT NULL,
  updated_at       bigint NOT NULL
);
CREATE UNIQUE INDEX jobs_by_external_id ON jobs (provider, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX jobs_by_task ON jobs (task_id);

-- Verified inbound deliveries. ARCHITECTURE §3.2: unique by (source, event_id).
CREATE TABLE inbox_events (
  id               text COLLATE "C" PRIMARY KEY,
  source           text COLLATE "C" NOT NULL,
  provider         text COLLATE "C" NOT NULL,
  event_id         text COLLATE "C" NOT NULL,
  body             bytea NOT NULL,
  status           text NOT NULL,
  type             text,
  job_external_id  text COLLATE "C",
  note             text,
  received_at      bigint NOT NULL,
  updated_at       bigint NOT NULL
);
CREATE UNIQUE INDEX inbox_dedupe ON inbox_events (source, event_id);
CREATE INDEX inbox_unmatched ON inbox_events (provider, job_external_id) WHERE status = 'unmatched';

-- The durable queue.
CREATE TABLE work_items (
  id                bigserial PRIMARY KEY,
  kind              text NOT NULL,
  tenant_id         text COLLATE "C",
  payload           text NOT NULL,
  status            text NOT NULL,
  run_at            bigint NOT NULL,
  priority          integer NOT NULL DEFAULT 0,
  attempts          integer NOT NULL DEFAULT 0,
  max_attempts      integer NOT NULL,
  lease_owner       text,
  lease_expires_at  bigint,
  dedupe_key        text COLLATE "C",
  concurrency_key   text COLLATE "C",
  last_error        text,
  created_at        bigint NOT NULL,
  updated_at        bigint NOT NULL
);
-- The claim reads the pending items in this order; nextRunAt reads the earliest run_at.
CREATE INDEX work_claim ON work_items (priority DESC, run_at, id) WHERE status = 'pending';
CREATE INDEX work_due ON work_items (run_at) WHERE status = 'pending';
-- At most one pending item per dedupe key (one pending advance per task).
CREATE UNIQUE INDEX work_dedupe ON work_items (dedupe_key) WHERE dedupe_key IS NOT NULL AND status = 'pending';
-- Never two leased items with one concurrency key (ARCHITECTURE §3.4): the claim checks this, and
-- this index is the guard when two claims race; the loser retries.
CREATE UNIQUE INDEX work_leased_key ON work_items (concurrency_key) WHERE status = 'leased';
CREATE INDEX work_leases ON work_items (lease_expires_at) WHERE status = 'leased';

-- The append-only log of task events, per tenant, feeding SSE and outbound webhooks.
CREATE TABLE task_events (
  seq         bigserial PRIMARY KEY,
  tenant_id   text COLLATE "C" NOT NULL,
  task_id     text COLLATE "C" NOT NULL,
  type        text NOT NULL,
  data        text NOT NULL,
  created_at  bigint NOT NULL
);
CREATE INDEX task_events_by_tenant ON task_events (tenant_id, seq);

CREATE TABLE meta (
  key    text COLLATE "C" PRIMARY KEY,
  value  text NOT NULL
);
