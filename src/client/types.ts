/**
 * The JSON shapes of the longhaul HTTP API (ARCHITECTURE §7), as the client returns them:
 * snake_case, as on the wire. Each is the static type of the schema the server validates and
 * serialises with (src/wire), imported as types only: the client loads nothing of the server.
 */
import type { Static } from "typebox";
import type * as wire from "../wire/index.ts";

export type TaskStatus = Static<typeof wire.TaskStatus>;

export type ApiError = Static<typeof wire.ErrorBody>["error"];

/** A failure as a task, step, job or delivery records it. */
export type ErrorInfo = Static<typeof wire.ErrorInfo>;

export type SubmitResult = Static<typeof wire.SubmitResult>;
export type SubmitBatchResult = Static<typeof wire.SubmitBatchResult>;
/** One task of `submitBatch`, in the client's camelCase options as `submit` takes them. */
export interface SubmitBatchItem<I = unknown> {
  type: string;
  input?: I;
  clientRequestId?: string;
  userId?: string;
  traceId?: string;
}
export type RerunResult = Static<typeof wire.RerunResult>;
export type BulkRerunResult = Static<typeof wire.BulkRerunResult>;
export type BulkRerunRequest = Static<typeof wire.BulkRerunBody>;

/** A task; `I` and `O` type its input and output when the caller knows them. */
export type TaskSummary<I = unknown, O = unknown> = Omit<
  Static<typeof wire.TaskSummary>,
  "input" | "output"
> & {
  input: I;
  output: O | null;
};

export type TaskStep = Static<typeof wire.Step>;
export type ApprovalLink = Static<typeof wire.ApprovalLink>;
export type Decision = Static<typeof wire.Decision>;
export type JobUsage = Static<typeof wire.JobUsage>;
export type TaskJob = Static<typeof wire.Job>;

export type TaskArtifact = Static<typeof wire.Artifact>;

export type TaskDetail<I = unknown, O = unknown> = TaskSummary<I, O> & {
  steps: TaskStep[];
  jobs: TaskJob[];
  artifacts: TaskArtifact[];
  reruns: string[];
};

/** A page of a list: `next_cursor` fetches the next one, null at the end. */
export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

export type TaskPage = Page<TaskSummary>;

export type CancelResult = Static<typeof wire.CancelResult>;

/** One entry of the tenant's task event log, as `GET /v1/events` streams it. */
export type TaskEvent<D = unknown> = Omit<Static<typeof wire.TaskEvent>, "data"> & { data: D };

export type SignalResult = Static<typeof wire.SignalResult>;

export type Timeline = Static<typeof wire.Timeline>;
export type TimelineEntry = Static<typeof wire.TimelineEntry>;
export type TimelineEvent = Static<typeof wire.TimelineEvent>;
export type TimelineDelivery = Static<typeof wire.TimelineDelivery>;
export type Verdict = Static<typeof wire.Verdict>;

export type InboxEvent = Static<typeof wire.InboxEvent>;
export type WebhookRefusal = Static<typeof wire.WebhookRefusal>;

export type WebhookEndpoint = Static<typeof wire.WebhookEndpoint>;
export type WebhookEndpointWithSecret = Static<typeof wire.WebhookEndpointWithSecret>;
export type EventSink = Static<typeof wire.EventSink>;
export type WebhookDelivery = Static<typeof wire.WebhookDelivery>;
/** A message of an approval step: a channel, an approver and how its delivery went. */
export type ApprovalNotification = Static<typeof wire.Notification>;

export type Tenant = Static<typeof wire.Tenant>;
export type TenantWithKey = Static<typeof wire.TenantWithKey>;
export type TenantWithKeys = Static<typeof wire.TenantWithKeys>;
export type Usage = Static<typeof wire.Usage>;

/** `GET /v1/task-types`. */
export type TaskTypeInfo = Static<typeof wire.TaskTypeInfo>;
export type TaskTypeList = Static<typeof wire.TaskTypeList>;
/** `GET /v1/stats/tasks`. */
export type TaskStats = Static<typeof wire.TaskStats>;
export type StatsBucket = Static<typeof wire.StatsBucket>;

export type SearchRequest = Static<typeof wire.SearchRequest>;
export type SearchResult = Static<typeof wire.SearchResult>;
export type SearchAnswer = Static<typeof wire.SearchAnswer>;
