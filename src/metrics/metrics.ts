import type { Counter, Histogram, Registry } from "prom-client";

type Labels = Record<string, string>;

/** How long after the first count prom-client is loaded, unless a scrape loads it first. */
const LOAD_AFTER_MS = 1000;

/** prom-client's content type of the text format, before it is loaded. */
const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

/** The prom-client side of one `Metrics`, made when prom-client is loaded. */
interface Loaded {
  registry: Registry;
  tasksSubmitted: Counter;
  webhooks: Counter;
  workItems: Counter;
  workSeconds: Histogram;
}

/** A counter of `Metrics`: counts at once, or as soon as prom-client is loaded. */
export interface LazyCounter {
  inc(labels: Labels): void;
}

/** The histogram of work item durations: `startTimer` returns the stop that records the seconds. */
export interface LazyHistogram {
  startTimer(labels: Labels): (more?: Labels) => number;
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

  constructor() {
    const loaded = () => this.loaded;
    this.registry = {
      metrics: async () => (await this.load()).registry.metrics(),
      get contentType() {
        return loaded()?.registry.contentType ?? PROMETHEUS_TEXT;
      },
    };
  }

  private counter(name: "tasksSubmitted" | "webhooks" | "workItems"): LazyCounter {
    return { inc: (labels) => this.with((m) => m[name].inc(labels)) };
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
    const m: Loaded = {
      registry,
      tasksSubmitted: new prom.Counter({
        name: "longhaul_tasks_submitted_total",
        help: "Tasks created by POST /v1/tasks (idempotent repeats not counted).",
        labelNames: ["type"],
        registers: [registry],
      }),
      webhooks: new prom.Counter({
        name: "longhaul_webhooks_received_total",
        help: "Verified webhook deliveries recorded by ingress, by source and whether they were new.",
        labelNames: ["source", "result"],
        registers: [registry],
      }),
      workItems: new prom.Counter({
        name: "longhaul_work_items_total",
        help: "Work items handled by this node's workers, by kind and outcome.",
        labelNames: ["kind", "outcome"],
        registers: [registry],
      }),
      workSeconds: new prom.Histogram({
        name: "longhaul_work_item_duration_seconds",
        help: "Time to handle one work item, by kind.",
        labelNames: ["kind"],
        buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
        registers: [registry],
      }),
    };
    prom.collectDefaultMetrics({ register: registry, prefix: "longhaul_" });
    return m;
  }
}
