/** The JSON shapes of the longhaul HTTP API (ARCHITECTURE §7), as the client returns them: snake_case, as on the wire. */

export type TaskStatus =
  | "pending"
  | "running"
  | "waiting"
  | "succeeded"
  | "failed"
  | "canceled"
  | "timed_out";

export interface ApiError {
  code: string;
  message: string;
}

export interface SubmitResult {
  task_id: string;
  status: TaskStatus;
  /** False when the same `client_request_id` had already created this task. */
  created: boolean;
}

export interface TaskSummary<I = unknown, O = unknown> {
  task_id: string;
  type: string;
  status: TaskStatus;
  input: I;
  output: O | null;
  error: ApiError | null;
  client_request_id: string | null;
  user_id: string | null;
  trace_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface TaskStep {
  id: string;
  kind: string;
  status: string;
  attempts: number;
  output: unknown;
  error: ApiError | null;
  provider?: string;
  job_id?: string | null;
  callback_url?: string;
  approval_url?: string;
  approvals?: { approver: string | null; approval_url: string; approve_url: string; reject_url: string }[];
  deadline: string | null;
  created_at: string;
  updated_at: string;
  [field: string]: unknown;
}

export interface TaskJob {
  id: string;
  step_id: string;
  provider: string;
  job_id: string | null;
  status: string;
  output: unknown;
  error: ApiError | null;
  usage: Record<string, number> | null;
  created_at: string;
  updated_at: string;
}

export interface TaskDetail<I = unknown, O = unknown> extends TaskSummary<I, O> {
  steps: TaskStep[];
  jobs: TaskJob[];
}

export interface TaskPage {
  data: TaskSummary[];
  next_cursor: string | null;
}

/** One entry of the tenant's task event log, as `GET /v1/events` streams it. */
export interface TaskEvent<D = unknown> {
  seq: number;
  task_id: string;
  type: string;
  data: D;
  created_at: string;
}

export interface SignalResult {
  signal_id: string;
  duplicate: boolean;
  /** How many waiting steps it ended. */
  matched: number;
}

export interface WebhookEndpoint {
  id: string;
  url: string;
  events: string[] | null;
  status: "enabled" | "disabled";
  disabled_reason: string | null;
  /** Until when the secret replaced by the last rotation also signs deliveries; null: it does not. */
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookDelivery {
  id: string;
  endpoint_id: string;
  event: { seq: number; type: string; task_id: string };
  state: "pending" | "delivered" | "failed" | "dead" | "canceled";
  attempts: number;
  last_status: number | null;
  last_error: ApiError | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
  updated_at: string;
}
