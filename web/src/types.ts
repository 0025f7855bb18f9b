/** The API's JSON shapes the dashboard reads (ARCHITECTURE §7), snake_case as on the wire. */

export type TaskStatus =
  | "pending"
  | "running"
  | "waiting"
  | "succeeded"
  | "failed"
  | "canceled"
  | "timed_out";

export const taskStatuses: TaskStatus[] = [
  "pending",
  "running",
  "waiting",
  "succeeded",
  "failed",
  "canceled",
  "timed_out",
];

export interface ErrorInfo {
  code: string;
  message: string;
  name?: string;
  retriable?: boolean;
}

export interface TaskSummary {
  task_id: string;
  type: string;
  status: TaskStatus;
  input: unknown;
  output: unknown;
  error: ErrorInfo | null;
  client_request_id: string | null;
  user_id: string | null;
  trace_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface ApprovalLink {
  approver: string | null;
  approve_url: string;
  reject_url: string;
}

export interface Decision {
  approver: string;
  decision: "approve" | "reject";
  comment: string | null;
  decided_at: string;
}

export interface Step {
  id: string;
  kind: "run" | "job" | "callback" | "approval" | "sleep" | "wait_event";
  status: "running" | "waiting" | "succeeded" | "failed" | "timed_out" | "canceled";
  attempts: number;
  output: unknown;
  error: ErrorInfo | null;
  provider?: string;
  job_id?: string | null;
  deadline: string | null;
  callback_url?: string;
  approval_url?: string;
  approvals?: ApprovalLink[];
  quorum?: number;
  decisions?: Decision[];
  match?: unknown;
  late_result?: unknown;
  created_at: string;
  updated_at: string;
}

export interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
  [k: string]: unknown;
}

export interface Job {
  id: string;
  step_id: string;
  provider: string;
  job_id: string | null;
  status: string;
  output: unknown;
  error: ErrorInfo | null;
  usage: Usage | null;
  created_at: string;
  updated_at: string;
}

export interface TaskDetail extends TaskSummary {
  steps: Step[];
  jobs: Job[];
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

export interface TimelineEvent {
  kind: "event";
  at: string;
  seq: number;
  type: string;
  data: Record<string, unknown> | null;
}

export type Verdict =
  | "applied"
  | "duplicate"
  | "late"
  | "out_of_order"
  | "unmatched"
  | "invalid"
  | "received";

export interface TimelineDelivery {
  kind: "delivery";
  at: string;
  id: string;
  origin: "webhook" | "poll";
  source: string;
  provider: string;
  event_id: string;
  type: string | null;
  job_id: string | null;
  status: string;
  verdict: Verdict;
  signature: "verified" | null;
  note: string | null;
}

export type TimelineEntry = TimelineEvent | TimelineDelivery;

export interface Timeline {
  task_id: string;
  entries: TimelineEntry[];
  truncated: boolean;
}

export interface InboxEvent {
  id: string;
  source: string;
  provider: string;
  event_id: string;
  type: string | null;
  job_id: string | null;
  status: string;
  note: string | null;
  received_at: string;
  body: string;
}

export const terminal = new Set<TaskStatus>(["succeeded", "failed", "canceled", "timed_out"]);
