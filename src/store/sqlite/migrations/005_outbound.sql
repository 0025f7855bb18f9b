-- Outbound webhooks (ARCHITECTURE §4.7): a tenant's endpoints, and one delivery per (endpoint, task
-- event), written in the transaction that appends the event so none is lost (ARCHITECTURE §3.1).
CREATE TABLE webhook_endpoints (
  id               TEXT PRIMARY KEY,
  tenant_id        TEXT NOT NULL REFERENCES tenants(id),
  url              TEXT NOT NULL,
  -- JSON array of event types and prefixes ("task.*"); NULL: every event.
  events           TEXT,
  -- The whsec_ signing secret, kept as given: every delivery is signed with it.
  secret           TEXT NOT NULL,
  status           TEXT NOT NULL,
  disabled_reason  TEXT,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_by_tenant ON webhook_endpoints (tenant_id, status);

CREATE TABLE webhook_deliveries (
  id               TEXT PRIMARY KEY,
  tenant_id        TEXT NOT NULL,
  endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_seq        INTEGER NOT NULL,
  event_type       TEXT NOT NULL,
  task_id          TEXT NOT NULL,
  -- pending | delivered | failed | dead | canceled
  state            TEXT NOT NULL,
  -- Every attempt ever made, and those of the current run of the schedule (a replay restarts it).
  attempts         INTEGER NOT NULL DEFAULT 0,
  round_attempts   INTEGER NOT NULL DEFAULT 0,
  last_status      INTEGER,
  last_error       TEXT,
  next_attempt_at  INTEGER,
  delivered_at     INTEGER,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (endpoint_id, event_seq);
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, id);
