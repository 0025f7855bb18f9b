-- Provider admission (ARCHITECTURE §4.8). model: the provider's budget key (its model) of a job
-- under a provider token budget, set when the job is admitted or first parked for room; the
-- tokens a provider holds enqueued are summed from the live jobs with this key, never counted
-- apart, so a job that ends frees its share at once. throttles: the provider's rate-limit
-- answers (429) to this job's creation so far, which grow its backoff and count no attempt.
ALTER TABLE jobs ADD COLUMN model text;
ALTER TABLE jobs ADD COLUMN throttles {int} NOT NULL DEFAULT 0;
CREATE INDEX jobs_by_provider_model ON jobs (provider, model) WHERE model IS NOT NULL AND status IN ('pending', 'created', 'running');
