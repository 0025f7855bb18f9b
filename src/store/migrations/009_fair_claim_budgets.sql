-- Fair claiming: each tenant's due work in order, found by a seek per tenant instead of a
-- scan of the whole backlog. Work without a tenant forms the lane ''.
CREATE INDEX work_lane ON work_items ((coalesce(tenant_id, '')), run_at, id) WHERE status = 'pending';
-- Token budgets: the job's declared max_tokens, and the part of it held against the budget
-- while the job runs (released when its actual usage is counted). Live reservations are
-- summed through jobs_by_tenant_status.
ALTER TABLE jobs ADD COLUMN max_tokens {bigint};
ALTER TABLE jobs ADD COLUMN reserved_tokens {bigint} NOT NULL DEFAULT 0;
