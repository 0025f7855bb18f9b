import type { ArtifactRow } from "../core/artifact.ts";
import { liveSecrets, type PreviousSecret, previousSecretsEnd } from "../core/endpoint-secrets.ts";
import type { ErrorInfo } from "../core/errors.ts";
import type { EventFilter } from "../core/event-filter.ts";
import type { JobStatus } from "../core/job.ts";
import { periodStart, type Quotas } from "../core/quota.ts";
import type { StepKind, StepStatus } from "../core/step.ts";
import type { TaskStatus } from "../core/task.ts";
import type { DecisionChannel } from "../core/wait.ts";
import { parseJson } from "./json.ts";
import type {
  ApiKeyRow,
  ApprovalDecisionRow,
  DeliveryState,
  InboxEventRow,
  InboxStatus,
  JobRow,
  StepRow,
  TaskEventRow,
  TaskRow,
  TenantRow,
  TenantUsage,
  WebhookDeliveryRow,
  WebhookEndpointRow,
  WorkItem,
  WorkKind,
} from "./store.ts";

/*
 * The tables as both databases return them (snake_case), and their mapping to the Store's
 * rows (camelCase). The schemas match column for column; where the drivers differ, the column
 * type says so: a flag is 0/1 in SQLite and a boolean in PostgreSQL. `bigint` columns arrive
 * as numbers from both (see `postgres/pool.ts`). JSON is stored as text in both.
 */

/** A flag column: SQLite gives 0 or 1, PostgreSQL gives a boolean. */
export type DbFlag = number | boolean;

export interface TenantDbRow {
  id: string;
  name: string;
  created_at: number;
  quotas: string;
  tokens_used: number;
  /** Tokens counted today and this month (UTC), when the query asked for them. */
  tokens_day?: number;
  tokens_month?: number;
  /** Tokens held by the tenant's live jobs' reservations. */
  tokens_reserved?: number;
}

/** `now` places the budget period; without it the period start is left empty. */
export const toTenant = (r: TenantDbRow, now?: number): TenantRow => {
  const quotas = parseJson<Quotas>(r.quotas) ?? {};
  return {
    id: r.id,
    name: r.name,
    createdAt: r.created_at,
    quotas,
    tokensUsed: r.tokens_used,
    tokensThisPeriod: (quotas.budget_period === "day" ? r.tokens_day : r.tokens_month) ?? 0,
    tokensReserved: r.tokens_reserved ?? 0,
    budgetPeriodStart: now === undefined ? "" : periodStart(now, quotas.budget_period),
  };
};

/** The columns of `api_keys` a listing shows; never the hash. */
export interface ApiKeyDbRow {
  id: string;
  hint: string | null;
  created_at: number;
  revoked_at: number | null;
}

export const toApiKey = (r: ApiKeyDbRow): ApiKeyRow => ({
  id: r.id,
  hint: r.hint,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});

export interface TaskDbRow {
  id: string;
  tenant_id: string;
  type: string;
  status: TaskStatus;
  input: string;
  output: string | null;
  error: string | null;
  client_request_id: string | null;
  user_id: string | null;
  trace_id: string | null;
  /** Migration 024. */
  rerun_of: string | null;
  rerun_reused_steps: number | null;
  created_at: number;
  updated_at: number;
}

export const toTask = (r: TaskDbRow): TaskRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  type: r.type,
  status: r.status,
  input: parseJson(r.input),
  output: parseJson(r.output),
  error: parseJson<ErrorInfo | null>(r.error),
  clientRequestId: r.client_request_id,
  userId: r.user_id,
  traceId: r.trace_id,
  rerunOf: r.rerun_of ?? null,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface StepDbRow {
  task_id: string;
  step_id: string;
  position: number;
  kind: StepKind;
  status: StepStatus;
  output: string | null;
  error: string | null;
  attempts: number;
  deadline_at: number | null;
  job_id: string | null;
  config: string | null;
  handed_off: DbFlag;
  late_output: string | null;
  created_at: number;
  updated_at: number;
}

export const toStep = (r: StepDbRow): StepRow => ({
  stepId: r.step_id,
  position: r.position,
  kind: r.kind,
  status: r.status,
  output: parseJson(r.output),
  error: parseJson<ErrorInfo | null>(r.error),
  attempts: r.attempts,
  deadlineAt: r.deadline_at,
  jobId: r.job_id,
  config: parseJson(r.config),
  handedOff: Boolean(r.handed_off),
  lateOutput: parseJson(r.late_output),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface JobDbRow {
  id: string;
  tenant_id: string;
  task_id: string;
  step_id: string;
  provider: string;
  external_id: string | null;
  status: JobStatus;
  input: string;
  output: string | null;
  error: string | null;
  usage: string | null;
  idempotency_key: string;
  poll_after_ms: number | null;
  cancel_on_timeout: DbFlag;
  throttles: number;
  model: string | null;
  created_at: number;
  updated_at: number;
}

export const toJob = (r: JobDbRow): JobRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  taskId: r.task_id,
  stepId: r.step_id,
  provider: r.provider,
  externalId: r.external_id,
  status: r.status,
  input: parseJson(r.input),
  output: parseJson(r.output),
  error: parseJson<ErrorInfo | null>(r.error),
  usage: parseJson(r.usage),
  idempotencyKey: r.idempotency_key,
  throttles: r.throttles ?? 0,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** The columns of a failed job that a tenant's usage lists. */
export type JobFailureDbRow = Pick<
  JobDbRow,
  "id" | "task_id" | "step_id" | "provider" | "external_id" | "error" | "updated_at"
>;

export const toJobFailure = (r: JobFailureDbRow): TenantUsage["recentJobFailures"][number] => ({
  jobId: r.id,
  taskId: r.task_id,
  stepId: r.step_id,
  provider: r.provider,
  externalId: r.external_id,
  error: parseJson(r.error),
  at: r.updated_at,
});

export interface TaskEventDbRow {
  seq: number;
  tenant_id: string;
  task_id: string;
  type: string;
  data: string;
  created_at: number;
}

export const toTaskEvent = (r: TaskEventDbRow): TaskEventRow => ({
  seq: r.seq,
  tenantId: r.tenant_id,
  taskId: r.task_id,
  type: r.type,
  data: parseJson(r.data),
  createdAt: r.created_at,
});

export interface WorkRow {
  id: number;
  kind: WorkKind;
  tenant_id: string | null;
  payload: string;
  status: WorkItem["status"];
  run_at: number;
  priority: number;
  attempts: number;
  max_attempts: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  dedupe_key: string | null;
  concurrency_key: string | null;
  last_error: string | null;
}

export const toWorkItem = (r: WorkRow): WorkItem => ({
  id: String(r.id),
  kind: r.kind,
  tenantId: r.tenant_id,
  payload: parseJson(r.payload),
  runAt: r.run_at,
  attempts: r.attempts,
  maxAttempts: r.max_attempts,
  status: r.status,
  leaseOwner: r.lease_owner,
  leaseExpiresAt: r.lease_expires_at,
  lastError: r.last_error,
});

export interface InboxDbRow {
  id: string;
  source: string;
  provider: string;
  event_id: string;
  body: Buffer;
  status: InboxStatus;
  type: string | null;
  job_external_id: string | null;
  note: string | null;
  received_at: number;
}

export const toInbox = (r: InboxDbRow): InboxEventRow => ({
  id: r.id,
  source: r.source,
  provider: r.provider,
  eventId: r.event_id,
  body: r.body,
  status: r.status,
  type: r.type,
  jobExternalId: r.job_external_id,
  note: r.note,
  receivedAt: r.received_at,
});

export interface SignalDbRow {
  id: string;
  name: string;
  data: string;
}

/** The output of a signal wait that a signal ended: the signal, its data parsed. */
export const signalOutput = (s: SignalDbRow) => ({ id: s.id, name: s.name, data: parseJson(s.data) });

export interface ApprovalDecisionDbRow {
  approver: string;
  decision: "approve" | "reject";
  comment: string | null;
  decided_at: number;
  channel: DecisionChannel | null;
  claimed_by: string | null;
  key_id: string | null;
  user_id: string | null;
  address: string | null;
  user_agent: string | null;
}

export const toApprovalDecision = (r: ApprovalDecisionDbRow): ApprovalDecisionRow => ({
  approver: r.approver,
  decision: r.decision,
  comment: r.comment,
  decidedAt: r.decided_at,
  channel: r.channel,
  claimedBy: r.claimed_by,
  keyId: r.key_id,
  userId: r.user_id,
  address: r.address,
  userAgent: r.user_agent,
});

export interface EndpointDbRow {
  id: string;
  tenant_id: string;
  url: string;
  kind: WebhookEndpointRow["kind"];
  target: string | null;
  events: string | null;
  secret: string;
  status: WebhookEndpointRow["status"];
  disabled_reason: string | null;
  /** JSON: `[{ "secret": …, "expires_at": ms }]`, the secrets rotations replaced, oldest first. */
  previous_secrets: string;
  created_at: number;
  updated_at: number;
}

/** The stored `previous_secrets` column. */
export const previousSecretsOf = (r: Pick<EndpointDbRow, "previous_secrets">): PreviousSecret[] =>
  (parseJson<{ secret: string; expires_at: number }[] | null>(r.previous_secrets) ?? []).map((p) => ({
    secret: p.secret,
    expiresAt: Number(p.expires_at),
  }));

/** `previous_secrets` as stored. */
export const previousSecretsJson = (list: readonly PreviousSecret[]): string =>
  JSON.stringify(list.map((p) => ({ secret: p.secret, expires_at: p.expiresAt })));

export const toEndpoint = (r: EndpointDbRow): WebhookEndpointRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  url: r.url,
  kind: r.kind,
  target: r.target,
  events: parseJson<string[] | null>(r.events),
  status: r.status,
  disabledReason: r.disabled_reason,
  previousSecretExpiresAt: previousSecretsEnd(previousSecretsOf(r)),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** An endpoint with its secrets as stored; of the previous ones, those that still sign at `now`. */
export const toEndpointWithSecrets = (r: EndpointDbRow, now: number) => {
  const live = liveSecrets(previousSecretsOf(r), now);
  return {
    ...toEndpoint(r),
    previousSecretExpiresAt: previousSecretsEnd(live),
    secret: r.secret,
    previousSecrets: live.map((p) => p.secret),
  };
};

/** Parsed filters by their stored text: an event's fan-out parses no JSON for endpoints it has seen. */
const filters = new Map<string, EventFilter>();

/** An endpoint's `events` column as a filter; null matches every event. */
export function filterOf(text: string | null): EventFilter {
  if (text === null) return null;
  let f = filters.get(text);
  if (f === undefined) {
    if (filters.size > 1000) filters.clear();
    f = parseJson<string[]>(text);
    filters.set(text, f);
  }
  return f;
}

export interface DeliveryDbRow {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  event_seq: number;
  event_type: string;
  task_id: string;
  state: DeliveryState;
  attempts: number;
  round_attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
  delivered_at: number | null;
  created_at: number;
  updated_at: number;
}

export const toDelivery = (r: DeliveryDbRow): WebhookDeliveryRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  endpointId: r.endpoint_id,
  eventSeq: r.event_seq,
  eventType: r.event_type,
  taskId: r.task_id,
  state: r.state,
  attempts: r.attempts,
  roundAttempts: r.round_attempts,
  lastStatus: r.last_status,
  lastError: parseJson<ErrorInfo | null>(r.last_error),
  nextAttemptAt: r.next_attempt_at,
  deliveredAt: r.delivered_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** An `artifacts` row as the drivers read it. */
export interface ArtifactDbRow {
  task_id: string;
  tenant_id: string;
  name: string;
  content_type: string;
  size: number;
  sha256: string;
  blob_key: string;
  created_at: number;
}

export const toArtifact = (r: ArtifactDbRow): ArtifactRow => ({
  taskId: r.task_id,
  tenantId: r.tenant_id,
  name: r.name,
  contentType: r.content_type,
  size: Number(r.size),
  sha256: r.sha256,
  blobKey: r.blob_key,
  createdAt: Number(r.created_at),
});
