-- Quotas per tenant (JSON: max_concurrent_jobs, tasks_per_day, token_budget, budget_policy,
-- submit_rate_per_s), and API keys with a public id so they can be listed and revoked.
ALTER TABLE tenants ADD COLUMN quotas text NOT NULL DEFAULT '{}';
ALTER TABLE tenants ADD COLUMN tokens_used {bigint} NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN id {id};
ALTER TABLE api_keys ADD COLUMN hint text;
UPDATE api_keys SET id = 'key_' || substr(key_hash, 1, 16) WHERE id IS NULL;
CREATE UNIQUE INDEX api_keys_by_id ON api_keys (id);
CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id);

-- A job that holds one of its tenant's concurrent-job slots (max_concurrent_jobs).
ALTER TABLE jobs ADD COLUMN slot {bool} NOT NULL DEFAULT {false};
CREATE INDEX jobs_by_tenant_status ON jobs (tenant_id, status);
CREATE INDEX jobs_failed ON jobs (tenant_id, updated_at) WHERE status = 'failed';

-- Work waiting for a tenant's quota: woken when a slot frees or a quota changes.
ALTER TABLE work_items ADD COLUMN parked {bool} NOT NULL DEFAULT {false};
--sqlite: CREATE INDEX work_parked ON work_items (tenant_id) WHERE parked = 1 AND status = 'pending';
--postgres: CREATE INDEX work_parked ON work_items (tenant_id) WHERE parked AND status = 'pending';

CREATE TABLE usage_daily (
  tenant_id        {id} NOT NULL,
  day              {id} NOT NULL,
  tasks_submitted  {int} NOT NULL DEFAULT 0,
  jobs_created     {int} NOT NULL DEFAULT 0,
  jobs_failed      {int} NOT NULL DEFAULT 0,
  tokens           {bigint} NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, day)
) {without_rowid};

CREATE INDEX tasks_by_tenant_user ON tasks (tenant_id, user_id, id) WHERE user_id IS NOT NULL;
CREATE INDEX tasks_by_tenant_trace ON tasks (tenant_id, trace_id, id) WHERE trace_id IS NOT NULL;
