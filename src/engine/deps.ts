import type { Logger } from "pino";
import type { BlobStore } from "../blobs/blob-store.ts";
import type { TaskIndex } from "../core/chunk.ts";
import type { Clock } from "../core/clock.ts";
import type { TaskFiles } from "../core/file-refs.ts";
import type { Registry } from "../core/registry.ts";
import type { TaskInfo, TaskType } from "../core/task-type.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { NotifySettings } from "../notify/settings.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import type { Provider } from "../providers/provider.ts";
import type { SinkPool } from "../sinks/sink-pool.ts";
import type {
  AdvanceStore,
  ArtifactStore,
  FileStore,
  InboxStore,
  JobStore,
  NotificationStore,
  OutboundStore,
  QueueStore,
  TaskStore,
  WaitStore,
  WebhookRefusalStore,
} from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";

/** The store roles the worker uses: no tenants, event log or meta. */
export type EngineStore = TaskStore &
  NotificationStore &
  AdvanceStore &
  JobStore &
  InboxStore &
  WaitStore &
  QueueStore &
  OutboundStore &
  WebhookRefusalStore &
  ArtifactStore &
  Pick<FileStore, "namedBlobKeys">;

/** What the work handlers need. Wired once in `src/app.ts`. */
export interface EngineDeps {
  store: EngineStore;
  clock: Clock;
  taskTypes: Registry<TaskType>;
  providers: Registry<Provider>;
  /** The URL a provider should post this provider's job events to (`<public_url>/hooks/<source>`). */
  webhookUrlFor: (provider: string) => string;
  log: Logger;
  metrics?: Metrics;
  urls: CapabilityUrls;
  /** Where `step.artifact` writes its bytes (the deployment's blob store). */
  blobs?: BlobStore;
  /** An artifact's cap (`limits.file_max_bytes`, absent: none) and the storage quota it counts against. */
  artifactLimits?: { maxBytes?: number | undefined; storageQuotaBytes?: number | undefined };
  /**
   * `limits.inline_max_bytes`: a step's result or a task's output whose JSON is longer is kept
   * in `blobs` and its row holds a reference (ARCHITECTURE §4.10). Absent or 0: all inline.
   */
  inlineMaxBytes?: number;
  /** Lifetime of a callback or approval without a timeout of its own (the token TTL). */
  defaultWaitMs: number;
  /** Deadline of a job or event wait without a timeout of its own. */
  defaultTimeoutMs: number;
  /** Default poll-after for jobs whose step does not set one. */
  pollAfterMs: number;
  /** Inbox rows older than this are pruned; it must cover every provider's retry horizon. */
  dedupeHorizonMs: number;
  /**
   * Sources whose events are confirmed with the provider's `status` rather than applied by
   * their body (`confirm_with_provider`, ARCHITECTURE §4.3). Absent: none.
   */
  confirmSources?: ReadonlySet<string>;
  /** Signals older than this are pruned (`limits.signal_retention_s`); later waits no longer see them. */
  signalRetentionMs: number;
  /** How outbound webhooks are sent: retry schedule, SSRF policy, attempt timeout. */
  outbound: OutboundSettings;
  /** Connections to event sinks' brokers (src/sinks); absent: the worker keeps its own, closed by stop(). */
  sinks?: SinkPool;
  /** How approvals' messages are sent: the mail server, Slack, webhook secret, named notifiers. */
  notify: NotifySettings;
  random?: () => number;
  /** The `ctx.files` of a tenant's tasks (files streamed from the blob store); absent: none. */
  taskFiles?: (tenantId: string) => TaskFiles;
  /** The `ctx.index` of a task (its chunks into the tenant's search index); absent: none. */
  taskIndex?: (task: TaskInfo) => TaskIndex;
  /**
   * True while the HTTP server of the same process is pressed (`httpPressure`): the worker
   * then claims at most YIELD_CLAIM items at a time, YIELD_PAUSE_MS apart. Absent: never pressed.
   */
  httpPressed?: () => boolean;
}
