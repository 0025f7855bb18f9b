-- Outbound webhooks (ARCHITECTURE §4.7): a tenant's endpoints, and one delivery per (endpoint, task
-- event), written in the transaction that appends the event so none is lost (ARCHITECTURE §3.1).
CREATE TABLE webhook_endpoints (
  id               {id} PRIMARY KEY,
  tenant_id        {id} NOT NULL REFERENCES tenants (id),
  url              text NOT NULL,
  -- JSON array of event types and prefixes ("task.*"); NULL: every event.
  events           text,
  -- The whsec_ signing secret, kept as given: every delivery is signed with it.
  secret           text NOT NULL,
  status           text NOT NULL,
  disabled_reason  text,
  created_at       {bigint} NOT NULL,
  updated_at       {bigint} NOT NULL
);
CREATE INDEX webhook_endpoints_by_tenant ON webhook_endpoints (tenant_id, status);

CREATE TABLE webhook_deliveries (
  id               {id} PRIMARY KEY,
  tenant_id        {id} NOT NULL,
  endpoint_id      {id} NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_seq        {bigint} NOT NULL,
  event_type       text NOT NULL,
  task_id          {id} NOT NULL,
  -- pending | delivered | failed | dead | canceled
  state            text NOT NULL,
  -- Every attempt ever made, and those of the current run of the schedule (a replay restarts it).
  attempts         {int} NOT NULL DEFAULT 0,
  round_attempts   {int} NOT NULL DEFAULT 0,
  last_status      {int},
  last_error       text,
  next_attempt_at  {bigint},
  delivered_at     {bigint},
  created_at       {bigint} NOT NULL,
  updated_at       {bigint} NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (endpoint_id, event_seq);
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, id);
