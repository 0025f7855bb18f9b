import type { Counter, Gauge, Histogram, Registry } from "prom-client";

type Labels = Record<string, string>;

/** How long after the first count prom-client is loaded, unless a scrape loads it first. */
const LOAD_AFTER_MS = 1000;

/** prom-client's content type of the text format, before it is loaded. */
const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

const COUNTERS = [
  "tasksSubmitted",
  "webhooks",
  "workItems",
  "tasksFinished",
  "waits",
  "webhookRefusals",
  "outboundAttempts",
  "outboundDead",
  "providerErrors",
  "deadItems",
] as const;
type CounterName = (typeof COUNTERS)[number];

const HISTOGRAMS = ["taskSeconds", "httpSeconds"] as const;
type HistogramName = (typeof HISTOGRAMS)[number];

/** The prom-client side of one `Metrics`, made when prom-client is loaded. */
type Loaded = { registry: Registry; workSeconds: Histogram } & Record<CounterName, Counter> &
  Record<HistogramName, Histogram>;

/** What the queue holds of one kind of work, read from the store when `/metrics` is scraped. */
export interface QueueKindSample {
  kind: string;
  depth: number;
  /** When the oldest item due now was due (ms since the epoch); null if none is due. */
  oldestDueAt: number | null;
}

/** Where the queue gauges come from: one store read per scrape, on the deployment's clock. */
export interface QueueSource {
  /** Every kind of work, so a kind with nothing pending reads 0 rather than vanishing. */
  kinds: readonly string[];
  read(): Promise<QueueKindSample[]>;
  now(): number;
}

/** A counter of `Metrics`: counts at once, or as soon as prom-client is loaded. */
export interface LazyCounter {
  inc(labels: Labels): void;
}

/** The histogram of work item durations: `startTimer` returns the stop that records the seconds. */
export interface LazyHistogram {
  startTimer(labels: Labels): (more?: Labels) => number;
}

/** A histogram of `Metrics` observed with a value in seconds. */
export interface LazyObserver {
  observe(labels: Labels, seconds: number): void;
}

/**
 * Prometheus metrics of one deployment, on a registry of its own (several apps in one
 * process, as in tests, never collide). Served at `GET /metrics`.
 *
 * prom-client is loaded by the first count or the first scrape, not while the server starts:
 * what is counted before it is loaded (up to a second after the first count) is counted once it
 * is, in order. Node's default metrics are collected from then on (the CPU, memory and start
 * time ones read the process's totals).
 */
export class Metrics {
  private loaded: Loaded | null = null;
  private loading: Promise<Loaded> | null = null;
  private pending: ((m: Loaded) => void)[] = [];
  private loadTimer: NodeJS.Timeout | null = null;

  readonly tasksSubmitted: LazyCounter = this.counter("tasksSubmitted");
  readonly webhooks: LazyCounter = this.counter("webhooks");
  readonly workItems: LazyCounter = this.counter("workItems");
  /** Tasks that ended, by `type` and `status` (succeeded, failed, timed_out). */
  readonly tasksFinished: LazyCounter = this.counter("tasksFinished");
  /** From a task's creation to its end, by `type` and `status`. */
  readonly taskSeconds: LazyObserver = this.observer("taskSeconds");
  /** Waits a task started, by `kind` (job, callback, approval, sleep, event). */
  readonly waits: LazyCounter = this.counter("waits");
  /** Webhooks refused, by `source` and `reason` (the error code answered). */
  readonly webhookRefusals: LazyCounter = this.counter("webhookRefusals");
  /** Outbound delivery attempts, by `outcome`. */
  readonly outboundAttempts: LazyCounter = this.counter("outboundAttempts");
  /** Outbound deliveries that gave up (dead), no labels. */
  readonly outboundDead: LazyCounter = this.counter("outboundDead");
  /** Provider calls that failed, by `provider` and `op` (create, poll, cancel). */
  readonly providerErrors: LazyCounter = this.counter("providerErrors");
  /** Work items dead-lettered after their last attempt, by `kind`. */
  readonly deadItems: LazyCounter = this.counter("deadItems");
  /** HTTP requests, by `method`, `route` (the pattern, `/v1/tasks/:id`) and `status`. */
  readonly httpSeconds: LazyObserver = this.observer("httpSeconds");
  readonly workSeconds: LazyHistogram = {
    startTimer: (labels) => {
      const start = process.hrtime.bigint();
      return (more) => {
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        this.with((m) => m.workSeconds.observe({ ...labels, ...more }, seconds));
        return seconds;
      };
    },
  };

  /** The registry's text and its content type, as `GET /metrics` serves them. */
  readonly registry: { metrics(): Promise<string>; readonly contentType: string };

  constructor(private readonly queue?: QueueSource) {
    const loaded = () => this.loaded;
    this.registry = {
      metrics: async () => (await this.load()).registry.metrics(),
      get contentType() {
        return loaded()?.registry.contentType ?? PROMETHEUS_TEXT;
      },
    };
  }

  private counter(name: CounterName): LazyCounter {
    return { inc: (labels) => this.with((m) => m[name].inc(labels)) };
  }

  private observer(name: HistogramName): LazyObserver {
    return { observe: (labels, seconds) => this.with((m) => m[name].observe(labels, seconds)) };
  }

  private with(use: (m: Loaded) => void): void {
    if (this.loaded) {
      use(this.loaded);
      return;
    }
    this.pending.push(use);
    // Loaded a moment later, not in the middle of the first work item or request; a scrape
    // loads it at once. A failed load leaves the counts pending; the next count tries again.
    if (this.loadTimer === null && this.loading === null) {
      this.loadTimer = setTimeout(() => {
        this.loadTimer = null;
        this.load().catch(() => {});
      }, LOAD_AFTER_MS);
      this.loadTimer.unref();
    }
  }

  /** Loads prom-client, makes this deployment's registry, and applies the counts made meanwhile. */
  private load(): Promise<Loaded> {
    if (this.loaded) return Promise.resolve(this.loaded);
    this.loading ??= import("prom-client").then(
      (prom) => {
        const m = this.make(prom);
        this.loaded = m;
        const pending = this.pending;
        this.pending = [];
        for (const use of pending) use(m);
        return m;
      },
      (err) => {
        this.loading = null;
        throw err;
      },
    );
    return this.loading;
  }

  private make(prom: typeof import("prom-client")): Loaded {
    const registry = new prom.Registry();
    const counter = (name: string, help: string, labelNames: string[]) =>
      new prom.Counter({ name, help, labelNames, registers: [registry] });
    const m: Loaded = {
      registry,
      tasksSubmitted: counter(
        "longhaul_tasks_submitted_total",
        "Tasks created by POST /v1/tasks (idempotent repeats not counted).",
        ["type"],
      ),
      webhooks: counter(
        "longhaul_webhooks_received_total",
        "Verified webhook deliveries recorded by ingress, by source and whether they were new.",
        ["source", "result"],
      ),
      workItems: counter(
        "longhaul_work_items_total",
        "Work items handled by this node's workers, by kind and outcome.",
        ["kind", "outcome"],
      ),
      workSeconds: new prom.Histogram({
        name: "longhaul_work_item_duration_seconds",
        help: "Time to handle one work item, by kind.",
        labelNames: ["kind"],
        buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
        registers: [registry],
      }),
      tasksFinished: counter(
        "longhaul_tasks_finished_total",
        "Tasks that ended on this node's workers, by type and status (succeeded, failed, timed_out).",
        ["type", "status"],
      ),
      taskSeconds: new prom.Histogram({
        name: "longhaul_task_duration_seconds",
        help: "Time from a task's creation to its end, by type and status.",
        labelNames: ["type", "status"],
        buckets: [0.01, 0.1, 1, 10, 60, 300, 1800, 3600, 21_600, 86_400],
        registers: [registry],
      }),
      waits: counter(
        "longhaul_waits_started_total",
        "Waits tasks started, by kind (job, callback, approval, sleep, event).",
        ["kind"],
      ),
      webhookRefusals: counter(
        "longhaul_webhook_refusals_total",
        "Webhooks of configured sources refused with a 4xx, by source and reason (the error code).",
        ["source", "reason"],
      ),
      outboundAttempts: counter(
        "longhaul_outbound_attempts_total",
        "Outbound webhook delivery attempts, by outcome (delivered, failed, gone).",
        ["outcome"],
      ),
      outboundDead: counter(
        "longhaul_outbound_dead_total",
        "Outbound webhook deliveries that gave up after their last attempt.",
        [],
      ),
      providerErrors: counter(
        "longhaul_provider_errors_total",
        "Provider calls that failed, by provider and operation (create, poll, cancel).",
        ["provider", "op"],
      ),
      deadItems: counter(
        "longhaul_work_items_dead_total",
        "Work items dead-lettered after their last attempt, by kind.",
        ["kind"],
      ),
      httpSeconds: new prom.Histogram({
        name: "longhaul_http_request_duration_seconds",
        help: "Time to answer one HTTP request, by method, route pattern and status.",
        labelNames: ["method", "route", "status"],
        buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
        registers: [registry],
      }),
    };
    if (this.queue) this.queueGauges(prom, registry, this.queue);
    prom.collectDefaultMetrics({ register: registry, prefix: "longhaul_" });
    return m;
  }

  /**
   * The queue's depth and the age of its oldest due item per kind, read at scrape time: both
   * gauges' collects share one store read (one statement) per scrape.
   */
  private queueGauges(prom: typeof import("prom-client"), registry: Registry, q: QueueSource): void {
    let reading: Promise<QueueKindSample[]> | null = null;
    const read = () => {
      reading ??= q.read().finally(() => {
        reading = null;
      });
      return reading;
    };
    const fill = async (gauge: Gauge, value: (s: QueueKindSample | undefined) => number) => {
      // A store that cannot be read leaves the gauges empty; the rest of the scrape still answers.
      const samples = await read().catch(() => null);
      gauge.reset();
      if (!samples) return;
      const byKind = new Map(samples.map((s) => [s.kind, s]));
      for (const kind of new Set([...q.kinds, ...byKind.keys()]))
        gauge.set({ kind }, value(byKind.get(kind)));
    };
    new prom.Gauge({
      name: "longhaul_queue_depth",
      help: "Pending work items, by kind (due now or later).",
      labelNames: ["kind"],
      registers: [registry],
      async collect() {
        await fill(this, (s) => s?.depth ?? 0);
      },
    });
    new prom.Gauge({
      name: "longhaul_queue_oldest_due_age_seconds",
      help: "How long the oldest pending item due now has been due, by kind; 0 when none is due.",
      labelNames: ["kind"],
      registers: [registry],
      async collect() {
        const now = q.now();
        await fill(this, (s) => (s?.oldestDueAt == null ? 0 : Math.max(0, now - s.oldestDueAt) / 1000));
      },
    });
  }
}
