-- A task's timeline reads every inbox row of its jobs, whatever their status
-- (inbox_unmatched covers only the unmatched ones).
CREATE INDEX inbox_by_job ON inbox_events (provider, job_external_id, received_at)
  WHERE job_external_id IS NOT NULL;
