import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

/**
 * Prometheus metrics of one deployment, on a registry of its own (several apps in one
 * process, as in tests, never collide). Served at `GET /metrics`.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly tasksSubmitted = new Counter({
    name: "longhaul_tasks_submitted_total",
    help: "Tasks created by POST /v1/tasks (idempotent repeats not counted).",
    labelNames: ["type"],
    registers: [this.registry],
  });
  readonly webhooks = new Counter({
    name: "longhaul_webhooks_received_total",
    help: "Verified webhook deliveries recorded by ingress, by source and whether they were new.",
    labelNames: ["source", "result"],
    registers: [this.registry],
  });
  readonly workItems = new Counter({
    name: "longhaul_work_items_total",
    help: "Work items handled by this node's workers, by kind and outcome.",
    labelNames: ["kind", "outcome"],
    registers: [this.registry],
  });
  readonly workSeconds = new Histogram({
    name: "longhaul_work_item_duration_seconds",
    help: "Time to handle one work item, by kind.",
    labelNames: ["kind"],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "longhaul_" });
  }
}
