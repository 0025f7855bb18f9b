-- Wait steps beyond jobs: callbacks, approvals, sleeps and signal waits.
ALTER TABLE steps ADD COLUMN config text;
ALTER TABLE steps ADD COLUMN handed_off {bool} NOT NULL DEFAULT {false};
-- A result that arrived after the step's deadline: kept for people to see, never applied.
ALTER TABLE steps ADD COLUMN late_output text;
ALTER TABLE jobs ADD COLUMN cancel_on_timeout {bool} NOT NULL DEFAULT {true};

CREATE TABLE approval_decisions (
  task_id     {id} NOT NULL REFERENCES tasks (id),
  step_id     {id} NOT NULL,
  approver    {id} NOT NULL,
  decision    text NOT NULL,
  comment     text,
  decided_at  {bigint} NOT NULL,
  PRIMARY KEY (task_id, step_id, approver)
) {without_rowid};

-- Signals a tenant sends (POST /v1/signals), kept so a wait registered later still sees them.
CREATE TABLE signals (
  id           {id} PRIMARY KEY,
  tenant_id    {id} NOT NULL,
  name         {id} NOT NULL,
  data         text NOT NULL,
  client_id    {id},
  received_at  {bigint} NOT NULL
);
CREATE UNIQUE INDEX signals_client_id ON signals (tenant_id, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX signals_by_name ON signals (tenant_id, name, received_at);

-- Steps waiting for a signal, by name, so a signal finds its waits without a scan.
CREATE TABLE event_waits (
  task_id    {id} NOT NULL,
  step_id    {id} NOT NULL,
  tenant_id  {id} NOT NULL,
  name       {id} NOT NULL,
  match      text NOT NULL,
  PRIMARY KEY (task_id, step_id)
) {without_rowid};
CREATE INDEX event_waits_by_name ON event_waits (tenant_id, name);
