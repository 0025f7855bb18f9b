-- Written once for both dialects; the tokens in braces and the lines marked for one dialect
-- are described in src/store/migrations.ts.
-- Times are milliseconds since the epoch (a 64-bit integer); JSON values are stored as text,
-- exactly as written, so the store returns what it was given. Ids and keys that are ordered or
-- compared use, under PostgreSQL, the "C" collation: byte order, as in SQLite.

-- Tenants and their API keys (stored as SHA-256 hashes only).
CREATE TABLE tenants (
  id          {id} PRIMARY KEY,
  name        text NOT NULL,
  created_at  {bigint} NOT NULL
);

CREATE TABLE api_keys (
  key_hash    {id} PRIMARY KEY,
  tenant_id   {id} NOT NULL REFERENCES tenants (id),
  created_at  {bigint} NOT NULL,
  revoked_at  {bigint}
);

CREATE TABLE tasks (
  id                 {id} PRIMARY KEY,
  tenant_id          {id} NOT NULL REFERENCES tenants (id),
  type               text NOT NULL,
  status             text NOT NULL,
  input              text NOT NULL,
  output             text,
  error              text,
  client_request_id  {id},
  user_id            text,
  trace_id           text,
  created_at         {bigint} NOT NULL,
  updated_at         {bigint} NOT NULL
);
-- ARCHITECTURE §3.7: one task per (tenant, client_request_id). Concurrent submits meet here.
CREATE UNIQUE INDEX tasks_client_request ON tasks (tenant_id, client_request_id) WHERE client_request_id IS NOT NULL;
CREATE INDEX tasks_by_tenant ON tasks (tenant_id, id);
CREATE INDEX tasks_by_tenant_status ON tasks (tenant_id, status, id);

-- The memo that replay reads: one row per (task, step), its outcome stored once.
CREATE TABLE steps (
  task_id      {id} NOT NULL REFERENCES tasks (id),
  step_id      {id} NOT NULL,
  position     {int} NOT NULL,
  kind         text NOT NULL,
  status       text NOT NULL,
  output       text,
  error        text,
  attempts     {int} NOT NULL DEFAULT 0,
  deadline_at  {bigint},
  job_id       {id},
  created_at   {bigint} NOT NULL,
  updated_at   {bigint} NOT NULL,
  PRIMARY KEY (task_id, step_id)
) {without_rowid};

CREATE TABLE jobs (
  id               {id} PRIMARY KEY,
  tenant_id        {id} NOT NULL,
  task_id          {id} NOT NULL REFERENCES tasks (id),
  step_id          {id} NOT NULL,
  provider         {id} NOT NULL,
  external_id      {id},
  status           text NOT NULL,
  input            text NOT NULL,
  output           text,
  error            text,
  usage            text,
  idempotency_key  {id} NOT NULL UNIQUE,
  created_at       {bigint} NOT NULL,
  updated_at       {bigint} NOT NULL
);
CREATE UNIQUE INDEX jobs_by_external_id ON jobs (provider, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX jobs_by_task ON jobs (task_id);

-- Verified inbound deliveries. ARCHITECTURE §3.2: unique by (source, event_id).
CREATE TABLE inbox_events (
  id               {id} PRIMARY KEY,
  source           {id} NOT NULL,
  provider         {id} NOT NULL,
  event_id         {id} NOT NULL,
  body             {bytes} NOT NULL,
  status           text NOT NULL,
  type             text,
  job_external_id  {id},
  note             text,
  received_at      {bigint} NOT NULL,
  updated_at       {bigint} NOT NULL
);
CREATE UNIQUE INDEX inbox_dedupe ON inbox_events (source, event_id);
CREATE INDEX inbox_unmatched ON inbox_events (provider, job_external_id) WHERE status = 'unmatched';

-- The durable queue.
CREATE TABLE work_items (
  id                {serial},
  kind              text NOT NULL,
  tenant_id         {id},
  payload           text NOT NULL,
  status            text NOT NULL,
  run_at            {bigint} NOT NULL,
  priority          {int} NOT NULL DEFAULT 0,
  attempts          {int} NOT NULL DEFAULT 0,
  max_attempts      {int} NOT NULL,
  lease_owner       text,
  lease_expires_at  {bigint},
  dedupe_key        {id},
  concurrency_key   {id},
  last_error        text,
  created_at        {bigint} NOT NULL,
  updated_at        {bigint} NOT NULL
);
--sqlite: CREATE INDEX work_due ON work_items (status, run_at);
-- PostgreSQL's claim reads the pending items in this order; nextRunAt reads the earliest run_at.
--postgres: CREATE INDEX work_claim ON work_items (priority DESC, run_at, id) WHERE status = 'pending';
--postgres: CREATE INDEX work_due ON work_items (run_at) WHERE status = 'pending';
-- At most one pending item per dedupe key (one pending advance per task).
CREATE UNIQUE INDEX work_dedupe ON work_items (dedupe_key) WHERE dedupe_key IS NOT NULL AND status = 'pending';
-- Never two leased items with one concurrency key (ARCHITECTURE §3.4): the claim checks this.
-- Under PostgreSQL this index is also the guard when two claims race; the loser retries. SQLite
-- has one writer, so no claims race there.
--sqlite: CREATE INDEX work_leased_key ON work_items (concurrency_key) WHERE status = 'leased';
--postgres: CREATE UNIQUE INDEX work_leased_key ON work_items (concurrency_key) WHERE status = 'leased';
CREATE INDEX work_leases ON work_items (lease_expires_at) WHERE status = 'leased';

-- The append-only log of task events, per tenant, feeding SSE and outbound webhooks.
CREATE TABLE task_events (
  seq         {serial},
  tenant_id   {id} NOT NULL,
  task_id     {id} NOT NULL,
  type        text NOT NULL,
  data        text NOT NULL,
  created_at  {bigint} NOT NULL
);
CREATE INDEX task_events_by_tenant ON task_events (tenant_id, seq);

CREATE TABLE meta (
  key    {id} PRIMARY KEY,
  value  text NOT NULL
);
