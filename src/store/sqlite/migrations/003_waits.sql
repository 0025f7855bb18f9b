-- Wait steps beyond jobs: callbacks, approvals, sleeps and signal waits.
ALTER TABLE steps ADD COLUMN config TEXT;
ALTER TABLE steps ADD COLUMN handed_off INTEGER NOT NULL DEFAULT 0;
-- A result that arrived after the step's deadline: kept for people to see, never applied.
ALTER TABLE steps ADD COLUMN late_output TEXT;
ALTER TABLE jobs ADD COLUMN cancel_on_timeout INTEGER NOT NULL DEFAULT 1;

CREATE TABLE approval_decisions (
  task_id     TEXT NOT NULL REFERENCES tasks(id),
  step_id     TEXT NOT NULL,
  approver    TEXT NOT NULL,
  decision    TEXT NOT NULL,
  comment     TEXT,
  decided_at  INTEGER NOT NULL,
  PRIMARY KEY (task_id, step_id, approver)
) WITHOUT ROWID;

-- Signals a tenant sends (POST /v1/signals), kept so a wait registered later still sees them.
CREATE TABLE signals (
  id           TEXT PRIMARY KEY,
  tenant_id    TEXT NOT NULL,
  name         TEXT NOT NULL,
  data         TEXT NOT NULL,
  client_id    TEXT,
  received_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX signals_client_id ON signals (tenant_id, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX signals_by_name ON signals (tenant_id, name, received_at);

-- Steps waiting for a signal, by name, so a signal finds its waits without a scan.
CREATE TABLE event_waits (
  task_id    TEXT NOT NULL,
  step_id    TEXT NOT NULL,
  tenant_id  TEXT NOT NULL,
  name       TEXT NOT NULL,
  match      TEXT NOT NULL,
  PRIMARY KEY (task_id, step_id)
) WITHOUT ROWID;
CREATE INDEX event_waits_by_name ON event_waits (tenant_id, name);
