-- A re-run is a new task (ARCHITECTURE §4.4): a task that has ended never moves again
-- (ARCHITECTURE §3.3), so re-running one submits another and names the one it re-runs here.
-- The index answers "which tasks re-run this one" for its detail and for a bulk re-run.
ALTER TABLE tasks ADD COLUMN rerun_of {id};
-- How many of the old task's steps the re-run reused, answered again to a repeated request.
ALTER TABLE tasks ADD COLUMN rerun_reused_steps {int};
CREATE INDEX tasks_by_rerun_of ON tasks (rerun_of) WHERE rerun_of IS NOT NULL;
