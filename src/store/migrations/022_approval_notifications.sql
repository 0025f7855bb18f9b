-- The messages approvals owe (ARCHITECTURE §4.4, "notify, then wait"): one row per channel,
-- approver and reason, written in the transaction that stores the approval's wait (or fires
-- its reminder or escalation), so a suspended approval never lacks its messages
-- (ARCHITECTURE §3.1). Each is sent by a `notify` work item, retried on the outbound schedule,
-- dead after its last attempt until replayed.
CREATE TABLE approval_notifications (
  id               {id} PRIMARY KEY,
  tenant_id        {id} NOT NULL,
  task_id          {id} NOT NULL,
  step_id          text NOT NULL,
  -- The step attempt whose links the message carries.
  step_attempt     {int} NOT NULL,
  -- Null: the step's own links (an approval without named approvers).
  approver         text,
  -- JSON: the `notify` entry as the step stored it (a channel, or a configured notifier's name).
  target           text NOT NULL,
  -- email | slack | wecom | webhook, or notifier:<name>
  channel          text NOT NULL,
  -- request | reminder | escalation
  reason           text NOT NULL,
  -- pending | sent | failed | dead | skipped
  state            text NOT NULL,
  attempts         {int} NOT NULL DEFAULT 0,
  round_attempts   {int} NOT NULL DEFAULT 0,
  last_error       text,
  next_attempt_at  {bigint},
  sent_at          {bigint},
  created_at       {bigint} NOT NULL,
  updated_at       {bigint} NOT NULL
);
CREATE INDEX approval_notifications_by_step ON approval_notifications (task_id, step_id, id);
