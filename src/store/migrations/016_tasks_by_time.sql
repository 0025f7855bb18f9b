-- The task list's created-at range (`created_after`, `created_before`) and the stats' submitted
-- counts read `tasks_by_tenant_created`; the stats' ended counts and durations read
-- `tasks_by_tenant_ended`, which holds ended tasks only: a task enters it once, when it ends
-- (a terminal task never changes again), so the tasks' many status changes before that do
-- not touch it. Its condition is the one `ops/stats-ops.ts` renders from core's states;
-- it carries status and created_at so the scan reads no table rows.
CREATE INDEX tasks_by_tenant_created ON tasks (tenant_id, created_at);
CREATE INDEX tasks_by_tenant_ended ON tasks (tenant_id, updated_at, status, created_at) WHERE status IN ('succeeded', 'failed', 'canceled', 'timed_out');
